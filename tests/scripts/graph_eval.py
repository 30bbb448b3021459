"""A graph network trained the way pytorch/examples' gcn and gat train it: the whole graph is
one batch (no DataLoader), and every iteration runs the training forward, backward and the
optimizer's step, then two eval forwards (``model.eval()`` under ``torch.no_grad()``) for the
train and validation accuracy, printing its own timer every --val-every epochs. A test pass
after the last epoch. --spin-ms makes every forward spin that long (the CPU busy), so where the
eval forwards' time goes can be read off."""

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam


def spin(ms):
    end = time.perf_counter() + ms / 1000.0
    while time.perf_counter() < end:
        pass


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim, use_bias=False):
        super().__init__()
        self.kernel = nn.Parameter(torch.empty(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(output_dim)) if use_bias else None

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.mm(adj_mat, support)
        if self.bias is not None:
            output = output + self.bias
        return output


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1, spin_ms=0.0):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
        self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
        self.dropout = nn.Dropout(dropout_p)
        self.spin_ms = spin_ms

    def forward(self, input_tensor, adj_mat):
        if self.spin_ms:
            spin(self.spin_ms)
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def make_graph(nodes, features, classes, edges):
    """cora-like: sparse binary features, a label a node, random citations; the adjacency
    renormalized as gcn does it, D^-1/2 (A + I) D^-1/2 (dense here)."""
    x = (torch.rand(nodes, features) < 0.02).float()
    x = x / x.sum(1, keepdim=True).clamp(min=1)
    labels = torch.randint(0, classes, (nodes,))
    src, dst = torch.randint(0, nodes, (edges,)), torch.randint(0, nodes, (edges,))
    adj = torch.zeros(nodes, nodes)
    adj[src, dst] = 1.0
    adj = adj + torch.eye(nodes)
    degree = adj.sum(1).pow(-0.5)
    adj = degree[:, None] * adj * degree[None, :]
    return x, labels, adj


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val, print_every=10):
    start_t = time.time()
    model.train()
    optimizer.zero_grad()

    output = model(*input)
    loss = criterion(output[mask_train], target[mask_train])

    loss.backward()
    optimizer.step()

    # Evaluate the model performance on training and validation sets
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)

    if epoch % print_every == 0:
        print(f'Epoch: {epoch:04d} ({(time.time() - start_t):.4f}s) loss_train: {loss_train:.4f} '
              f'acc_train: {acc_train:.4f} loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}', flush=True)


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]

        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='A graph convolutional network, gcn-style')
    parser.add_argument('--epochs', type=int, default=200)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--l2', type=float, default=5e-4)
    parser.add_argument('--dropout-p', type=float, default=0.5)
    parser.add_argument('--hidden-dim', type=int, default=16)
    parser.add_argument('--val-every', type=int, default=20)
    parser.add_argument('--nodes', type=int, default=600)
    parser.add_argument('--features', type=int, default=256)
    parser.add_argument('--spin-ms', type=float, default=0.0)
    parser.add_argument('--seed', type=int, default=42)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    features, labels, adj_mat = make_graph(args.nodes, args.features, 7, 4 * args.nodes)
    idx = torch.randperm(len(labels))
    n_test, n_val = args.nodes // 3, args.nodes // 6
    idx_test, idx_val, idx_train = idx[:n_test], idx[n_test:n_test + n_val], idx[n_test + n_val:]

    gcn = GCN(features.shape[1], args.hidden_dim, labels.max().item() + 1, True, args.dropout_p,
              args.spin_ms)
    optimizer = Adam(gcn.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()

    for epoch in range(args.epochs):
        train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, idx_train, idx_val,
                   args.val_every)

    loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    print(f'Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}')
