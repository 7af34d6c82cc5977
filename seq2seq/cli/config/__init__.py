"""The entry points' config plumbing: Hydra's config tree and resolvers, typed schemas, renamed keys, and
the adapters from a composed config to the typed arguments of the package (no library logic here).

launch.py         what every entry point does first: find the config tree, print a UserError as one line
paths.py          path settings: relative to where the command ran, or - for stdin / stdout
command_settings.py  every command's settings: each name's one meaning, each command's keys, the renamed keys
schemas.py        typed schemas that check config values when Hydra composes them
renamed_keys.py   renamed keys: an old key accepted for one release with a warning, or a one-line error
resolvers.py      config resolvers for sweeps: threads per parallel job, the Optuna study's storage and seed
study_sweeper.py  the Optuna sweeper of hydra/sweeper=study: a baseline trial 0, interrupted trials queued again
setting_checks.py checks of shared settings: device, progress bar, finite numbers
recipe_choice.py  which 30-minute recipe the quickstart trains, by native bf16 and the number of cores
data_config.py    the `data` config group -> prepare_training_data's arguments (free of torch)
training_data.py  the `data` config group -> what the training loop consumes
training_setup.py what seq2seq-train and seq2seq-qe-train do before the loop: targets, family, seed, resume
finetuning.py     seq2seq-train init_from=: the run's config made to agree with the checkpoint it starts from
guided_alignment.py  guided alignment's settings, checked and completed before a run starts
hydra_records.py  a training run's .hydra/ records, written once its run directory is locked
translator_config.py   a command's config -> a Translator: translate, serve, backtranslate, distill, qe-data
corpus_settings.py  seq2seq-backtranslate's and seq2seq-distill's config -> their typed settings
"""
