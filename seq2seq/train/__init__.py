"""Training. One concept per module; no Hydra here (the CLI builds the parts and hands them over):

loss.py         label-smoothed NLL, fused with the output projection (no (N, V) logits kept)
objective.py    batch_loss: a batch through the model and the loss, per real target token
schedules.py    learning rate as a pure function of the update (Noam, inverse sqrt, cosine)
optim.py        AdamW with parameter groups; gradient clipping
precision.py    the old name of seq2seq.precision, kept for code that imports it from here
loop.py         Trainer: updates, stopping rules, validation, checkpoints, exact resumption
validation.py   dev loss, dev BLEU/chrF from real decoding, samples, attention picture
reporting.py    progress bar, log lines, TensorBoard
distributed.py  data parallelism under torchrun (gloo on CPU, NCCL on GPUs)
rng.py          every global random generator's state, for exact resumption
"""
