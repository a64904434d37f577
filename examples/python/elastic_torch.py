"""Elastic training with PyTorch: survives workers dying and hosts joining.

    echo localhost:2 > hosts.txt
    hvdrun --min-np 1 --max-np 4 --host-discovery-script "cat hosts.txt" \\
        python examples/python/elastic_torch.py
    # meanwhile: echo -e "localhost:2\\n127.0.0.1:2" > hosts.txt   (2 more workers join)

Each step averages the gradients of a fixed global batch split among the
current workers; the state (model, optimizer, epoch, batch) is committed
every step, so a failure loses at most one step. See docs/elastic.md.
"""
import torch

import hvd.elastic
import hvd.torch as hvd
import hvd.torch.elastic

EPOCHS, BATCHES, GLOBAL_BATCH = 5, 20, 64

torch.manual_seed(0)
x_all = torch.randn(EPOCHS * BATCHES * GLOBAL_BATCH, 8)
y_all = x_all @ torch.linspace(-1, 1, 8) + 0.5

model = torch.nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
state = hvd.torch.elastic.TorchState(model, optimizer, epoch=0, batch=0)
state.register_reset_callbacks([lambda: print("world size is now %d" % hvd.size(), flush=True)])


@hvd.elastic.run
def train(state):
    while state.epoch < EPOCHS:
        while state.batch < BATCHES:
            start = (state.epoch * BATCHES + state.batch) * GLOBAL_BATCH
            rows = torch.arange(start, start + GLOBAL_BATCH).chunk(hvd.size())[hvd.rank()]
            optimizer.zero_grad()
            loss = ((model(x_all[rows]).squeeze(1) - y_all[rows]) ** 2).sum() / GLOBAL_BATCH
            loss.backward()
            for name, p in model.named_parameters():
                p.grad.copy_(hvd.allreduce(p.grad, op=hvd.Sum, name="grad." + name))
            optimizer.step()
            state.batch += 1
            state.commit()
        if hvd.rank() == 0:
            print("epoch %d done on %d workers" % (state.epoch, hvd.size()), flush=True)
        state.epoch, state.batch = state.epoch + 1, 0
        state.commit()


hvd.init()
train(state)
if hvd.rank() == 0:
    print("final weights", model.weight.detach().view(-1).tolist(), flush=True)
hvd.shutdown()
