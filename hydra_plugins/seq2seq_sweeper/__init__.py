"""seq2seq's Hydra sweeper plugin (Hydra instantiates sweepers only from the hydra_plugins package):

study_sweeper.py  StudySweeper, configs/hydra/sweeper/study.yaml's: Optuna's sweeper with a baseline
                  trial 0 and interrupted trials queued again (the work is in seq2seq/cli/config/study_sweeper.py)
"""
