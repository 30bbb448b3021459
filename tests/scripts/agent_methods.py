"""An on-policy RL loop in the style of cleanrl's ppo.py, without an environment: an Agent whose
actor and critic are called through its methods (never its forward), a rollout under no_grad
before each burst of minibatch updates (--epochs x --minibatches optimizer steps an iteration)."""

import argparse

import torch
from torch import nn
from torch.distributions import Categorical

parser = argparse.ArgumentParser()
parser.add_argument("--iterations", type=int, default=6)
parser.add_argument("--rollout", type=int, default=64)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--minibatches", type=int, default=4)
args = parser.parse_args()
torch.manual_seed(0)


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.critic = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 1))
        self.actor = nn.Sequential(nn.Linear(8, 64), nn.Tanh(), nn.Linear(64, 4))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        dist = Categorical(logits=self.actor(x))
        action = dist.sample() if action is None else action
        return action, dist.log_prob(action), dist.entropy(), self.critic(x)


agent = Agent()
optimizer = torch.optim.Adam(agent.parameters(), lr=2.5e-4, eps=1e-5)
for iteration in range(args.iterations):
    obs = torch.randn(args.rollout, 8)
    with torch.no_grad():  # the rollout: one call a state (an environment would step here)
        steps = [agent.get_action_and_value(o.unsqueeze(0)) for o in obs]
    actions = torch.cat([s[0] for s in steps])
    old_logprob = torch.cat([s[1] for s in steps])
    returns = torch.randn(args.rollout)
    size = args.rollout // args.minibatches
    for epoch in range(args.epochs):
        for start in range(0, args.rollout, size):
            mb = slice(start, start + size)
            _, logprob, entropy, value = agent.get_action_and_value(obs[mb], actions[mb])
            ratio = (logprob - old_logprob[mb]).exp()
            loss = -(ratio * returns[mb]).mean() + 0.5 * ((value.squeeze(1) - returns[mb]) ** 2).mean() \
                - 0.01 * entropy.mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    print(f"iteration {iteration} loss {loss.item():.5f}", flush=True)
