"""Command-line entry points (thin: they read configs and files, and call the package):

prepare.py        seq2seq-prepare: build or check the corpus of a data config
train.py          seq2seq-train: compose the config, build data/model/optimizer, train
finetuning.py     seq2seq-train init_from=: the run's config made to agree with the checkpoint it starts from
hydra_records.py  a training run's .hydra/ records, written once its run directory is locked
training_data.py  the `data` config group -> what the training loop consumes
training_setup.py what seq2seq-train and seq2seq-qe-train do before the loop: targets, family, seed, resume
data_config.py    the `data` config group -> prepare_training_data's arguments (free of torch)
guided_alignment.py  guided alignment's settings, checked and completed before a run starts
translate.py      seq2seq-translate: a layer over seq2seq.Translator (files, stdin, n-best, alignments)
translation_output.py  what seq2seq-translate writes: columns, JSON lines, Moses n-best lines, the report
language_columns.py  per-line src_lang/tgt_lang columns of seq2seq-translate's input (multilingual models)
attention_output.py    alignments and attention pictures (alignment=true, attention_dir=)
translator_config.py   a command's config -> a Translator: translate, serve, backtranslate, distill, qe-data
text_files.py     a command's text in and out, one line per line: a file, or - for stdin / stdout
backtranslate.py  seq2seq-backtranslate: monolingual text + a reverse model -> synthetic parallel data
distill.py        seq2seq-distill: training sources + a teacher -> the corpus a student learns from
distill_filter.py its filter: the teacher's scores of its translations -> the pairs left out
corpus_translation.py  a whole file translated chunk by chunk, resumable: what those two share
translated_corpus_dir.py  their output directory: settings fingerprint, lock, chunks saved whole, corpus
export.py         seq2seq-export: a checkpoint -> a CTranslate2 model directory, or a Hugging Face one
import_model.py   seq2seq-import: a Hugging Face model directory (MarianMT, M2M100/NLLB) -> a checkpoint
shortlist.py      seq2seq-shortlist: a vocabulary shortlist for a model, learned from its training text
serve.py          seq2seq-serve: the HTTP server's settings, checked before the model loads
score.py          seq2seq-score: BLEU, chrF, TER with sacreBLEU signatures (--flags: it takes file lists)
average.py        seq2seq-average: average the weights of the last checkpoints (--flags, as fairseq's)
qe_data.py        seq2seq-qe-data: translate a parallel corpus with checkpoints, label outputs: a QE corpus
qe_train.py       seq2seq-qe-train: train an encoder-only QE model with the training loop of seq2seq-train
qe.py             seq2seq-qe: score translations with a QE model, one line per input line
recipe_choice.py  which 30-minute recipe the quickstart trains, by native bf16 and the number of cores
schemas.py        typed schemas that check config values when Hydra composes them
renamed_keys.py   renamed keys: an old key accepted for one release with a warning, or a one-line error
resolvers.py      config resolvers for sweeps: threads per parallel job, the Optuna study's storage and seed
study_sweeper.py  the Optuna sweeper of hydra/sweeper=study: a baseline trial 0, interrupted trials queued again
launch.py         what every entry point does first: find the config tree, print a UserError as one line
setting_checks.py checks of shared settings: device, progress bar, finite numbers
"""
