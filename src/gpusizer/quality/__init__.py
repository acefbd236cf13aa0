"""The quality gate (R2 quality, R10, R13): criteria locked before comparing, a frozen corpus,
formats evaluated against a reference, lm-evaluation-harness results imported.

Modules: ``criteria_lock`` (lock and check), ``corpus`` (the frozen JSON Lines file),
``regression`` (the tolerance test), ``lm_eval_import`` (results files), ``formats`` and
``evaluate`` (the run; the only modules importing torch, needs ``pip install "gpusizer[quality]"``),
``evidence_doc`` (the evidence document a run or import writes). Importing this package imports
no torch.
"""
