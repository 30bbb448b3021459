"""pytorch/examples' word_language_model/main.py, the way it is written, on a tiny model and a
synthetic corpus: no torch.optim optimizer (the update is hand-written SGD,
``p.data.add_(p.grad, alpha=-lr)``, after ``clip_grad_norm_``), batches cut from one long token
tensor (no DataLoader), an evaluate() pass (``model.eval()`` + ``torch.no_grad()``) after each
epoch, the learning rate annealed when the validation loss stops improving, the best model
saved with torch.save."""

import argparse
import math
import os
import tempfile
import time

import torch
from torch import nn


class LanguageModel(nn.Module):
    """Embedding, a hidden layer, a decoder: the shape of RNNModel without its recurrence."""

    def __init__(self, ntoken, ninp, nhid, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.hidden = nn.Linear(ninp, nhid)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input):
        emb = self.drop(self.encoder(input))
        output = self.drop(torch.tanh(self.hidden(emb)))
        return nn.functional.log_softmax(self.decoder(output), dim=-1)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


def main():
    parser = argparse.ArgumentParser(description="PyTorch language model")
    parser.add_argument("--emsize", type=int, default=32)
    parser.add_argument("--nhid", type=int, default=32)
    parser.add_argument("--lr", type=float, default=20)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch_size", type=int, default=20)
    parser.add_argument("--bptt", type=int, default=35)
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--save", default=os.path.join(tempfile.gettempdir(), "manual_sgd_model.pt"))
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    ntokens = 100
    g = torch.Generator().manual_seed(args.seed)
    corpus = torch.randint(ntokens, (20 * (35 * 20 + 1),), generator=g)  # 20 batches an epoch
    train_data = batchify(corpus, args.batch_size)
    val_data = batchify(torch.randint(ntokens, (10 * 35 * 10,), generator=g), 10)

    model = LanguageModel(ntokens, args.emsize, args.nhid)
    criterion = nn.NLLLoss()

    def evaluate(data_source):
        model.eval()
        total_loss = 0.0
        with torch.no_grad():
            for i in range(0, data_source.size(0) - 1, args.bptt):
                data, targets = get_batch(data_source, i, args.bptt)
                output = model(data)
                total_loss += len(data) * criterion(output.view(-1, ntokens), targets).item()
        return total_loss / (len(data_source) - 1)

    def train(lr, epoch):
        model.train()
        total_loss = 0.0
        start_time = time.time()
        for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
            data, targets = get_batch(train_data, i, args.bptt)
            model.zero_grad()
            output = model(data)
            loss = criterion(output.view(-1, ntokens), targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            total_loss += loss.item()
            if batch % args.log_interval == 0 and batch > 0:
                cur_loss = total_loss / args.log_interval
                elapsed = time.time() - start_time
                print(f"| epoch {epoch:3d} | {batch:5d} batches | lr {lr:02.2f} | ms/batch "
                      f"{elapsed * 1000 / args.log_interval:5.2f} | loss {cur_loss:5.2f} | ppl "
                      f"{math.exp(cur_loss):8.2f}", flush=True)
                total_loss = 0.0
                start_time = time.time()

    lr = args.lr
    best_val_loss = None
    try:
        for epoch in range(1, args.epochs + 1):
            train(lr, epoch)
            val_loss = evaluate(val_data)
            print(f"| end of epoch {epoch:3d} | valid loss {val_loss:5.2f}", flush=True)
            if not best_val_loss or val_loss < best_val_loss:
                with open(args.save, "wb") as f:
                    torch.save(model.state_dict(), f)
                best_val_loss = val_loss
            else:
                lr /= 4.0
    except KeyboardInterrupt:
        print("Exiting from training early", flush=True)


if __name__ == "__main__":
    main()
