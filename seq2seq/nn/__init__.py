"""Pure building blocks: explicit arguments, no config objects, no I/O. One concept per module:

positional.py   position information: sinusoidal and learned (added to embeddings), rotary (rotates q, k),
                ALiBi (additive bias)
backends.py     attention kernels behind one signature (ATTENTION_BACKENDS: sdpa, xformers, manual), the
                sliding-window `local_attend`; the only place masks change form
attention.py    SelfAttention (fused QKV, optional window, KV cache), CrossAttention (memory K/V once),
                AttentionContext (positions and masks built once per stack)
kv_cache.py     KVCache (one layer's growing keys and values) and DecoderState.reorder for beam search
layers.py       FeedForward, Residual (pre/post norm), EncoderLayer and DecoderLayer (built from those
                parts), MemoryDownsampler (pooled cross-attention memory)
embeddings.py   TokenEmbedding (scaled by sqrt(D), or not), OutputProjection (optionally sharing its weight;
                an optional logit bias)
dropout.py      Dropout with a cheaper CPU keep-mask, same distribution
linear.py       Linear whose float32 CPU inference runs on oneDNN where that is faster (AVX-512 CPUs)
quantized.py    Int8Linear and quantize_int8: a trained model's linear layers on PyTorch's dynamic int8
                kernels, for CPU inference
packing.py      Packing: position-wise layers on the real tokens of a padded batch only
"""
