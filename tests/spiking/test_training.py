"""End to end: a spiking network learns the motion direction of synthetic event-camera data."""

import torch
from torch import nn

import hybridai
from hybridai import events

SENSOR = (16, 16, 2)


def test_spiking_network_learns_moving_shapes_directions():
    streams, labels = events.moving_shapes(96, sensor_size=SENSOR, duration_us=40_000, n_frames=16, seed=0)
    to_steps = events.ToTimeSteps(SENSOR, num_steps=8, duration_us=40_000, flatten=True)
    x, y = torch.stack([to_steps(s) for s in streams], dim=1), torch.as_tensor(labels)  # [T, B, 512]
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(512, 64),
        hybridai.LIF(0.8),
        nn.Linear(64, 4),
        hybridai.LIF(0.8, output="membrane"),
        hybridai.MembraneDecoder("max"),
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=5e-3)
    train, test = slice(0, 64), slice(64, 96)
    for _ in range(40):
        optimiser.zero_grad()
        loss = nn.functional.cross_entropy(model(x[:, train]), y[train])
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        accuracy = (model(x[:, test]).argmax(1) == y[test]).float().mean().item()
    assert loss.item() < 0.1
    assert accuracy >= 0.8  # chance is 0.25
