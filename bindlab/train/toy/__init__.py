"""Training and evaluating the toy vision–language models (``train toy``, ``eval toy``).

:mod:`~bindlab.train.toy.data` writes the captions and scenes, :mod:`~bindlab.train.toy.pairs` the CompoSET-style
pair twins, :mod:`~bindlab.train.toy.lit` the locked-text (LiT) targets, :mod:`~bindlab.train.toy.train` the loop,
:mod:`~bindlab.train.toy.eval` the evaluation, :mod:`~bindlab.train.toy.card` the model card and
:mod:`~bindlab.train.toy.audit` the check that held-out pairs never reach training. The models themselves are the
encoder backend :mod:`bindlab.encoders.toy`.
"""
