"""``babelprobe owl build``: an OWL dataset from one's own books (OWL App. B.1-B.2).

Stages, in the paper's order (each a module here, orchestrated by ``stages.py``):

1. ``split`` (sentences.py): sentences with stable ids per book and language (B.1 step 1).
2. ``translate`` (translate.py): non-English books into English, sentence tags kept (B.1 step 2,
   Fig. 15 prompt; GPT-4o, temperature 0.3, max 4,000 tokens in the paper).
3. ``align`` (align.py): Par3's Needleman-Wunsch over a sentence similarity matrix, paragraphs of
   the English original recovered; the matched translation sentence ids give the non-English
   paragraph (B.1 steps 3 and 5).
4. ``filter`` (filters.py): length filter and SacreBLEU filter (add-one smoothing, 5.0) (B.1 step 4).
5. ``posthoc`` (filters.py): character names (English NER) and >= 40 o200k tokens (B.1 step 6).
6. ``sample`` (filters.py): at most 100 passages per book and set, stratified by name; masking (B.1 step 8).
7. ``mt`` (translate.py + qc.py): unseen languages, ``@@PLACEHOLDER@@`` for ``[MASK]``, three checks (B.2).
8. ``write`` (stages.py): ``owl.jsonl`` for ``run owl`` and ``build_report.json``.
"""
