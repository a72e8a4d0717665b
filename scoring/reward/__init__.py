"""A reward model learned here from the human votes, and the rankings active selection serves.

- features.py: frozen inputs (a feature judge's per-clip vectors, the condition's text, the reference)
- model.py: the preference network, its training (Bradley–Terry on votes) and its weight file
- data.py: votes as arrays and leakage-free splits (plain Python: simulations use it too)
- selection.py: uncertainty and disagreement priorities (plain numpy)
- services.py: training runs, the model registry (a judge per model), held-out evaluation, priorities

Only services.py touches the database; the others run in a simulation without Django.
"""
