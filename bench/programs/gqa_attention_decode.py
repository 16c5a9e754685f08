"""GQA decode attention as published model files write it (issue 23's speed
shape): q/k RMSNorm, RoPE on the rotated halves, and an online softmax over
blocks of 64 keys of a ctx_len cache, placed on 8 kv heads x 16 CTAs (the
16 hold replicas: a speed shape for the analysis, not a kernel to copy). Analysed at
ctx_len=4096 by bench/attention_decode.py."""
from tilefoundry import module
from tilefoundry.dsl import *
from tilefoundry.target import CudaTarget

D = 4096
NQ = 32
NKV = 8
HD = 128
G = NQ // NKV
SPLITS = 16
BLOCK = 64
EPS = 1e-6
SCALE = 1.0 / HD ** 0.5
CTX = DimVar("ctx_len", 1024, 32769)
LEVELS = (Topology("cta", NKV * SPLITS),)


@module(entry="attention", target=CudaTarget("nvidia.h200_sxm"), topologies=LEVELS)
class Attn:
    @func
    def attention(
        h: Tensor[(1, D), "bf16"],
        w_q: ConstTensor[(D, NQ * HD), "bf16"],
        w_k: ConstTensor[(D, NKV * HD), "bf16"],
        q_norm: ConstTensor[(HD,), "bf16"],
        k_norm: ConstTensor[(HD,), "bf16"],
        cos: Tensor[(1, HD), "f32"],
        sin: Tensor[(1, HD), "f32"],
        k_cache: Tensor[(NKV, CTX, HD), "bf16"],
        v_cache: Tensor[(NKV, CTX, HD), "bf16"],
    ) -> Tensor[(NKV, G, HD), "f32"]:
        with Mesh(("cta",), (NKV * SPLITS,), ("c",)) as flat:
            q = tf.reshape(h @ w_q, (NQ, HD))
            k = tf.reshape(h @ w_k, (NKV, HD))
            q = tf.rms_norm(q, q_norm, EPS)
            k = tf.rms_norm(k, k_norm, EPS)
            q32 = tf.cast(q, "f32")
            half = HD // 2
            q_rot = tf.concat(q32[:, :half] * cos[:, :half] - q32[:, half:] * sin[:, half:],
                               q32[:, half:] * cos[:, half:] + q32[:, :half] * sin[:, :half], axis=-1)
        with Mesh(("cta",), (NKV, SPLITS), ("kvh", "sp")) as m:
            qg = tf.reshard(tf.reshape(q_rot, (NKV, G, HD)), (NKV @ m.kvh, G, HD), "smem") * SCALE
            run_max = tf.full_like(tf.reduce(qg, (-1,), True, ReduceKind.MAX), -1e30)
            run_sum = tf.full_like(run_max, 0.0)
            acc = tf.full_like(qg, 0.0)
            for blk in tile(CTX, BLOCK):
                kb = tf.cast(tf.reshard(k_cache[:, blk, :], (NKV @ m.kvh, BLOCK, HD), "smem"), "f32")
                vb = tf.cast(tf.reshard(v_cache[:, blk, :], (NKV @ m.kvh, BLOCK, HD), "smem"), "f32")
                s = tf.matmul(qg, tf.transpose(kb, (0, 2, 1)))
                new_max = tf.maximum(run_max, tf.reduce(s, (-1,), True, ReduceKind.MAX))
                alpha = tf.exp(run_max - new_max)
                p = tf.exp(s - new_max)
                run_sum = run_sum * alpha + tf.reduce(p, (-1,), True, ReduceKind.SUM)
                acc = acc * alpha + tf.matmul(p, vb)
                run_max = new_max
            return tf.reshard(acc / run_sum, (NKV, G, HD), "gmem")
