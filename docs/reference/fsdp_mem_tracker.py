"""PyTorch's own per-rank figure for a sharded Llama fine-tune, to hold vramlab's plans against.

Not part of the project's build, dependencies or CI: run it by hand in a virtual environment with
PyTorch 2.15 (`python -m venv /root/torchenv && /root/torchenv/bin/pip install torch`, about
5 GB with its CUDA libraries; no GPU is used). It builds a Llama under FakeTensorMode with a fake
process group of --world ranks, wraps each block and then the root with FSDP2's fully_shard
(optionally with MixedPrecisionPolicy(param_dtype=bf16)), checkpoints every block
(non-reentrant), trains two steps with AdamW, and prints FSDPMemTracker's peak by category for
the second step, in MiB.

--no-foreach: single-tensor AdamW. Under fake DTensors the tracker counted foreach AdamW's state
at many times its shard (86,754 MiB for Llama-2-7B's 6,426 on 8 ranks), so the figures in
docs/plans.md are taken without it; at 8 ranks the full-precision peak is in backward either way.
--no-step: no optimizer step (backward's peak alone; add twice the sharded parameters for
AdamW's state).

Defaults are Llama-3.1-8B's shape; Llama-2-7B is --vocab 32000 --ff 11008 --kv 32.
"""
import argparse, math
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
from torch.testing._internal.distributed.fake_pg import FakeStore
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=8)
p.add_argument("--mp", action="store_true")
p.add_argument("--no-foreach", action="store_true")
p.add_argument("--no-step", action="store_true")
p.add_argument("--bf16-params", action="store_true")
p.add_argument("--layers", type=int, default=32)
p.add_argument("--width", type=int, default=4096)
p.add_argument("--heads", type=int, default=32)
p.add_argument("--kv", type=int, default=8)
p.add_argument("--ff", type=int, default=14336)
p.add_argument("--vocab", type=int, default=128256)
p.add_argument("--seq", type=int, default=2048)
a = p.parse_args()

dist.init_process_group("fake", rank=0, world_size=a.world, store=FakeStore())
from torch.distributed.device_mesh import init_device_mesh
mesh = init_device_mesh("cpu", (a.world,))

class RMSNorm(nn.Module):
    def __init__(s, d):
        super().__init__(); s.weight = nn.Parameter(torch.ones(d))
    def forward(s, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * s.weight

class Block(nn.Module):
    def __init__(s):
        super().__init__()
        d, h, kv = a.width, a.heads, a.kv
        s.hd = d // h
        s.n1, s.n2 = RMSNorm(d), RMSNorm(d)
        s.q = nn.Linear(d, d, bias=False); s.k = nn.Linear(d, kv * s.hd, bias=False)
        s.v = nn.Linear(d, kv * s.hd, bias=False); s.o = nn.Linear(d, d, bias=False)
        s.gate = nn.Linear(d, a.ff, bias=False); s.up = nn.Linear(d, a.ff, bias=False)
        s.down = nn.Linear(a.ff, d, bias=False)
    def inner(s, x):
        b, t, d = x.shape
        y = s.n1(x)
        q = s.q(y).view(b, t, a.heads, s.hd).transpose(1, 2)
        k = s.k(y).view(b, t, a.kv, s.hd).transpose(1, 2)
        v = s.v(y).view(b, t, a.kv, s.hd).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        x = x + s.o(att.transpose(1, 2).reshape(b, t, d))
        y = s.n2(x)
        return x + s.down(F.silu(s.gate(y)) * s.up(y))
    def forward(s, x):
        return checkpoint(s.inner, x, use_reentrant=False)

class Llama(nn.Module):
    def __init__(s):
        super().__init__()
        s.tok = nn.Embedding(a.vocab, a.width)
        s.layers = nn.ModuleList([Block() for _ in range(a.layers)])
        s.norm = RMSNorm(a.width)
        s.out = nn.Linear(a.width, a.vocab, bias=False)
    def forward(s, ids):
        x = s.tok(ids)
        for l in s.layers:
            x = l(x)
        return s.out(s.norm(x))

with FakeTensorMode():
    if a.bf16_params:
        torch.set_default_dtype(torch.bfloat16)
    model = Llama()
    torch.set_default_dtype(torch.float32)
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16) if a.mp else MixedPrecisionPolicy()
    for l in model.layers:
        fully_shard(l, mesh=mesh, mp_policy=mp)
    fully_shard(model, mesh=mesh, mp_policy=mp)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=not a.no_foreach)
    ids = torch.randint(0, a.vocab, (1, a.seq))
    tgt = torch.randint(0, a.vocab, (1, a.seq))
    tracker = FSDPMemTracker(mod=model, optm=opt)
    tracker.track_inputs((ids, tgt))
    with tracker:
        for i in range(2):
            logits = model(ids)
            loss = F.cross_entropy(logits.float().view(-1, a.vocab), tgt.view(-1))
            loss.backward()
            if not a.no_step:
                opt.step()
            opt.zero_grad()
            if i == 0:
                tracker.reset_mod_stats()
    snap = tracker.get_tracker_snapshot("peak")
    for dev, cats in snap.items():
        print(dev, {str(k): round(v / 2**20, 1) for k, v in cats.items()})
