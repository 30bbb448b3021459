"""pytorch/examples' gcn/main.py, the way it is written, on a small synthetic graph (no
download): GraphConv layers that multiply by a sparse adjacency matrix (``torch.spmm``) on
sparse node features, Adam, and in every iteration one training step then two evaluation
passes (``model.eval()`` + ``torch.no_grad()``) for the train and validation accuracy. It never
calls torch.compile: tuimon's compiled variant compiles ``GCN`` at its first call, and Dynamo
cannot (``Attempted to wrap sparse Tensor``): every attempt fails, and the variant runs eager."""

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim import Adam


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.kernel = nn.Parameter(torch.Tensor(input_dim, output_dim))
        nn.init.xavier_normal_(self.kernel)
        self.bias = nn.Parameter(torch.zeros(output_dim))

    def forward(self, input_tensor, adj_mat):
        support = torch.mm(input_tensor, self.kernel)
        output = torch.spmm(adj_mat, support)
        return output + self.bias


class GCN(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, dropout_p=0.5):
        super().__init__()
        self.gc1 = GraphConv(input_dim, hidden_dim)
        self.gc2 = GraphConv(hidden_dim, output_dim)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input_tensor, adj_mat):
        x = self.gc1(input_tensor, adj_mat)
        x = F.relu(x)
        x = self.dropout(x)
        x = self.gc2(x, adj_mat)
        return F.log_softmax(x, dim=1)


def graph(nodes, features, classes, edges, generator):
    """cora's shape, small: binary features scaled per node, a symmetric-normalised adjacency
    with self-loops (D^-1/2 (A + I) D^-1/2), both sparse."""
    x = (torch.rand(nodes, features, generator=generator) < 0.05).float()
    x = x / x.sum(1, keepdim=True).clamp(min=1)
    pairs = torch.randint(0, nodes, (2, edges), generator=generator)
    adj = torch.eye(nodes) + torch.sparse_coo_tensor(pairs, torch.ones(edges), (nodes, nodes))
    degree = torch.sqrt(1 / adj.sum(1))
    adj = degree[:, None] * adj * degree[None, :]
    labels = torch.randint(0, classes, (nodes,), generator=generator)
    return x.to_sparse(), labels, adj.to_sparse()


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val, print_every):
    start_t = time.time()
    model.train()
    optimizer.zero_grad()
    output = model(*input)
    loss = criterion(output[mask_train], target[mask_train])
    loss.backward()
    optimizer.step()
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)
    if epoch % print_every == 0:
        print(f"Epoch: {epoch:04d} ({(time.time() - start_t):.4f}s) loss_train: {loss_train:.4f} "
              f"acc_train: {acc_train:.4f} loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}", flush=True)


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]
        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--val-every", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(42)
    features, labels, adj_mat = graph(300, 120, 7, 900, torch.Generator().manual_seed(0))
    idx = torch.randperm(len(labels))
    idx_test, idx_val, idx_train = idx[:80], idx[80:140], idx[140:]
    gcn = GCN(features.shape[1], 16, 7)
    optimizer = Adam(gcn.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()
    for epoch in range(args.epochs):
        train_iter(epoch + 1, gcn, optimizer, criterion, (features, adj_mat), labels, idx_train, idx_val,
                   args.val_every)
    loss_test, acc_test = test(gcn, criterion, (features, adj_mat), labels, idx_test)
    print(f"Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}")
