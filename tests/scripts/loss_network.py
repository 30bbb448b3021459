"""A style-transfer trainer shaped like pytorch/examples' fast_neural_style: a small image
transformation network is trained (the only module the optimizer holds) through a *frozen*
loss network (VGG-like, ``requires_grad=False``) run twice a step, on the stylized images and
on the content images, with a content loss on one of its features and a style loss on the Gram
matrices of all four; Adam; an ImageFolder-like data set of images; the losses read with
``.item()`` every step and logged every --log-interval batches. The real script needs VGG16's
pretrained weights (a download): the loss network here is seeded instead, which changes what it
computes, not what it costs a step."""

import argparse
import time
from collections import namedtuple

import torch
from torch.optim import Adam
from torch.utils.data import DataLoader, Dataset


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super().__init__()
        self.reflection_pad = torch.nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        return self.conv2d(self.reflection_pad(x))


class ResidualBlock(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        out = self.relu(self.in1(self.conv1(x)))
        return self.in2(self.conv2(out)) + x


class UpsampleConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super().__init__()
        self.upsample = upsample
        self.reflection_pad = torch.nn.ReflectionPad2d(kernel_size // 2)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        if self.upsample:
            x = torch.nn.functional.interpolate(x, mode="nearest", scale_factor=self.upsample)
        return self.conv2d(self.reflection_pad(x))


class TransformerNet(torch.nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.conv1 = ConvLayer(3, width, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(width, affine=True)
        self.conv2 = ConvLayer(width, 2 * width, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(2 * width, affine=True)
        self.res1 = ResidualBlock(2 * width)
        self.res2 = ResidualBlock(2 * width)
        self.deconv1 = UpsampleConvLayer(2 * width, width, kernel_size=3, stride=1, upsample=2)
        self.in3 = torch.nn.InstanceNorm2d(width, affine=True)
        self.deconv2 = ConvLayer(width, 3, kernel_size=9, stride=1)
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.res2(self.res1(y))
        y = self.relu(self.in3(self.deconv1(y)))
        return self.deconv2(y)


class LossNet(torch.nn.Module):
    """VGG16's first four slices, narrower (vgg.py's Vgg16 with requires_grad=False)."""

    def __init__(self, width=32, requires_grad=False):
        super().__init__()
        c = width

        def block(cin, cout, n):
            layers = []
            for k in range(n):
                layers += [torch.nn.Conv2d(cin if k == 0 else cout, cout, 3, padding=1), torch.nn.ReLU()]
            return layers

        self.slice1 = torch.nn.Sequential(*block(3, c, 2))
        self.slice2 = torch.nn.Sequential(torch.nn.MaxPool2d(2), *block(c, 2 * c, 2))
        self.slice3 = torch.nn.Sequential(torch.nn.MaxPool2d(2), *block(2 * c, 4 * c, 3))
        self.slice4 = torch.nn.Sequential(torch.nn.MaxPool2d(2), *block(4 * c, 8 * c, 3))
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h_relu1_2 = self.slice1(X)
        h_relu2_2 = self.slice2(h_relu1_2)
        h_relu3_3 = self.slice3(h_relu2_2)
        h_relu4_3 = self.slice4(h_relu3_3)
        out = namedtuple("VggOutputs", ["relu1_2", "relu2_2", "relu3_3", "relu4_3"])
        return out(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)


class Images(Dataset):
    """ImageFolder's items: (an image as ToTensor() then mul(255) makes it, its class)."""

    def __init__(self, n, size):
        self.n, self.size = n, size

    def __len__(self):
        return self.n

    def __getitem__(self, idx):
        g = torch.Generator().manual_seed(idx)
        return torch.rand(3, self.size, self.size, generator=g).mul(255), 0


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    return features.bmm(features_t) / (ch * h * w)


def normalize_batch(batch):
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


def train(args):
    torch.manual_seed(args.seed)
    train_dataset = Images(args.images, args.image_size)
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size)

    transformer = TransformerNet()
    optimizer = Adam(transformer.parameters(), args.lr)
    mse_loss = torch.nn.MSELoss()

    vgg = LossNet(args.loss_width, requires_grad=False)
    style = torch.rand(3, args.image_size, args.image_size).mul(255)
    style = style.repeat(args.batch_size, 1, 1, 1)
    features_style = vgg(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]

    for e in range(args.epochs):
        transformer.train()
        agg_content_loss = 0.
        agg_style_loss = 0.
        count = 0
        for batch_id, (x, _) in enumerate(train_loader):
            n_batch = len(x)
            count += n_batch
            optimizer.zero_grad()

            y = transformer(x)

            y = normalize_batch(y)
            x = normalize_batch(x)

            features_y = vgg(y)
            features_x = vgg(x)

            content_loss = args.content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)

            style_loss = 0.
            for ft_y, gm_s in zip(features_y, gram_style):  # noqa: B905 - as the original
                gm_y = gram_matrix(ft_y)
                style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
            style_loss *= args.style_weight

            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()

            agg_content_loss += content_loss.item()
            agg_style_loss += style_loss.item()

            if (batch_id + 1) % args.log_interval == 0:
                print(f"{time.ctime()}\tEpoch {e + 1}:\t[{count}/{len(train_dataset)}]\t"
                      f"content: {agg_content_loss / (batch_id + 1):.6f}\t"
                      f"style: {agg_style_loss / (batch_id + 1):.6f}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="fast-neural-style-like training")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--images", type=int, default=400)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--loss-width", type=int, default=32)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--content-weight", type=float, default=1e5)
    parser.add_argument("--style-weight", type=float, default=1e10)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--log-interval", type=int, default=20)
    train(parser.parse_args())
