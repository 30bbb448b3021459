"""Layer-by-layer training in the manner of pytorch/examples mnist_forward_forward: each layer
has its own Adam optimizer and trains for its steps before the next layer starts; the first
layer's optimizer is kept (the layer holds it). Every optimizer step is a training step."""

import argparse

import torch
from torch import nn


class Layer(nn.Linear):
    def __init__(self, d_in, d_out):
        super().__init__(d_in, d_out)
        self.opt = torch.optim.Adam(self.parameters(), lr=0.01)

    def train_layer(self, x, steps):
        for _ in range(steps):
            loss = (self(x).relu().pow(2).mean() - 1.0).pow(2)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        print(f"layer done, last loss {loss.item():.6f}", flush=True)
        return self(x).relu().detach()


parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40, help="steps per layer")
args = parser.parse_args()
torch.manual_seed(0)
x = torch.randn(128, 32)
for layer in (Layer(32, 32), Layer(32, 32)):
    x = layer.train_layer(x, args.steps)
