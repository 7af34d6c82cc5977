"""Training. One concept per module; no Hydra here (the CLI builds the parts and hands them over):

loss.py         label-smoothed NLL, fused with the output projection (no (N, V) logits kept)
alignment_loss.py  guided alignment: one cross-attention head against external word alignments
objective.py    batch_loss: a batch through the model and the loss, per real target token
schedules.py    learning rate as a pure function of the update (Noam, inverse sqrt, cosine, constant)
optim.py        AdamW with parameter groups; gradient clipping
loop.py         Trainer: updates, stopping rules, validation, checkpoints, exact resumption
validation.py   dev loss, dev BLEU/chrF from real decoding, samples, attention picture
reporting.py    progress bar, log lines, TensorBoard
distributed.py  data parallelism under torchrun (gloo on CPU, NCCL on GPUs)
sharding.py     trainer.strategy: ddp replicas or FSDP2 shards of the model over the ranks
sharded_checkpoint.py  an fsdp run's checkpoints: sharded state beside whole weights, resumable on any ranks
rng.py          every global random generator's state, for exact resumption
init_from.py    a fine-tuning run's starting checkpoint: architecture, tokenizers, weights, checked
freezing.py     trainer.freeze: parameters left as they are, by name pattern
lora.py         trainer.lora: low-rank adapters trained in place of the weights, saved beside them
fingerprint.py  the settings that define a run's model and data, checked on resume
run_dir.py      a run directory holds one run: no fresh start among another run's files
snapshots.py    weights-only snapshots for trainer.average_fraction
averaging.py    checkpoint averaging, and scoring the average on the whole dev set
finish.py       the end of a run: average, choose the checkpoint to translate, tune its decoding
tune_decoding.py  a model's tuned decoding: length_penalty and max_len_a chosen on dev data
"""
