"""A GAN's step in the manner of pytorch/examples dcgan: the discriminator's optimizer steps after
two backward() calls (real, fake), the generator's after a third. The discriminator's step() ends
tuimon's step, so from the second step on a step holds three backward() calls: errG, then
errD_real and errD_fake."""

import torch
from torch import nn

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
netD = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
optD = torch.optim.Adam(netD.parameters(), lr=2e-4)
optG = torch.optim.Adam(netG.parameters(), lr=2e-4)
bce = nn.BCEWithLogitsLoss()
for step in range(80):
    real = torch.randn(32, 2) + 3.0
    netD.zero_grad()
    errD_real = bce(netD(real), torch.ones(32, 1))
    errD_real.backward()
    fake = netG(torch.randn(32, 8))
    errD_fake = bce(netD(fake.detach()), torch.zeros(32, 1))
    errD_fake.backward()
    optD.step()
    netG.zero_grad()
    errG = bce(netD(fake), torch.ones(32, 1))
    errG.backward()
    optG.step()
