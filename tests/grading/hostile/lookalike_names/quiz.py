"""The reference solution with every name written in mathematical bold letters: Python reads names NFKC-normalized
(PEP 3131), so this is the very same code; the similarity check compared the letters as written and flagged nothing."""
import 𝐭𝐨𝐫𝐜𝐡


def 𝐝𝐞𝐜𝐨𝐝𝐞𝐫_𝐚𝐭𝐭𝐞𝐧𝐭𝐢𝐨𝐧(𝐬, 𝐇, 𝐫𝐞𝐭𝐮𝐫𝐧_𝐰𝐞𝐢𝐠𝐡𝐭𝐬=False):
    """Attention of a decoder state over encoder states.

    Each encoder state ``h_i`` is scored against the decoder state ``s`` with
    a dot product, the scores are turned into weights ``alpha`` with a
    softmax over the ``n`` states, and the result is the weighted sum
    ``v = sum_i alpha_i h_i``.

    Shapes: ``s``: (..., d), ``H``: (..., n, d) -> ``v``: (..., d); with
    ``return_weights=True`` returns ``(v, alphas)``, ``alphas``: (..., n).
    Raises ``ValueError`` when the last dims of ``s`` and ``H`` differ.

    Example (the quiz): ``s = [0.4685, 0.9785]`` against ``h1 = [0.5539,
    0.7239]``, ``h2 = [0.4111, 0.3878]``, ``h3 = [0.2376, 0.1264]`` scores
    ``[0.9678, 0.5721, 0.2350]``, weighs them ``[0.4643, 0.3126, 0.2231]`` and
    gives ``v = [0.4387, 0.4855]``.

    Trap: the weights belong to the encoder states, one per state: the
    softmax runs over ``n``, not over the ``d`` features.
    """
    if 𝐬.𝐬𝐡𝐚𝐩𝐞[-1] != 𝐇.𝐬𝐡𝐚𝐩𝐞[-1] or 𝐇.𝐝𝐢𝐦() < 2:
        raise 𝐕𝐚𝐥𝐮𝐞𝐄𝐫𝐫𝐨𝐫(f"need s (..., d) and H (..., n, d) with the same d, got shapes {tuple(s.shape)} and {tuple(H.shape)}")
    𝐬𝐜𝐨𝐫𝐞𝐬 = (𝐇 * 𝐬.𝐮𝐧𝐬𝐪𝐮𝐞𝐞𝐳𝐞(-2)).𝐬𝐮𝐦(-1)  # (..., n)
    𝐚𝐥𝐩𝐡𝐚𝐬 = 𝐭𝐨𝐫𝐜𝐡.𝐬𝐨𝐟𝐭𝐦𝐚𝐱(𝐬𝐜𝐨𝐫𝐞𝐬, 𝐝𝐢𝐦=-1)  # (..., n)
    𝐯 = (𝐚𝐥𝐩𝐡𝐚𝐬.𝐮𝐧𝐬𝐪𝐮𝐞𝐞𝐳𝐞(-1) * 𝐇).𝐬𝐮𝐦(-2)  # (..., d)
    return (𝐯, 𝐚𝐥𝐩𝐡𝐚𝐬) if 𝐫𝐞𝐭𝐮𝐫𝐧_𝐰𝐞𝐢𝐠𝐡𝐭𝐬 else 𝐯


def 𝐪𝐮𝐢𝐳_𝐚𝐧𝐬𝐰𝐞𝐫():
    """The quiz's ``v`` as a float32 tensor, computed with ``decoder_attention``.

    >>> quiz_answer()
    tensor([0.4387, 0.4855])
    """
    𝐬 = 𝐭𝐨𝐫𝐜𝐡.𝐭𝐞𝐧𝐬𝐨𝐫([0.4685, 0.9785])  # (d,)
    𝐇 = 𝐭𝐨𝐫𝐜𝐡.𝐭𝐞𝐧𝐬𝐨𝐫([[0.5539, 0.7239], [0.4111, 0.3878], [0.2376, 0.1264]])  # (n, d)
    return 𝐝𝐞𝐜𝐨𝐝𝐞𝐫_𝐚𝐭𝐭𝐞𝐧𝐭𝐢𝐨𝐧(𝐬, 𝐇)  # (d,)

PARAMS = {}
