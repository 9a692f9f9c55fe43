"""The torch network of the transformer extractor: encoder, trigger layer, event layers.

See the package docstring (:mod:`clinex.pv.models.transformer`) for the architecture.
torch is imported inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from typing import Any

from clinex.pv.models.tagging import EVENT_LAYERS, n_tags

__all__ = ["build_net", "layer_stack"]

#: Relative distances to the trigger (sub-word tokens) beyond this share one embedding.
_MAX_DIST = 32


def layer_stack(encoder: Any) -> Any:
    """The transformer blocks of a BERT-like encoder (``encoder.encoder.layer``), or None."""
    from torch import nn

    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    return layers if isinstance(layers, nn.ModuleList) else None


def build_net(encoder: Any, dropout: float, dist_dim: int = 32) -> Any:
    """The extractor's network: ``encoder`` plus the trigger layer and the event layers.

    Parameters
    ----------
    encoder : transformers.PreTrainedModel
        The sentence encoder (its ``config.hidden_size`` sizes the layers).
    dropout : float
        Dropout on the encoder output before the tag layers.
    dist_dim : int, default 32
        Size of the embedding of a token's signed distance to the trigger.

    Returns
    -------
    torch.nn.Module
        With ``encode``, ``encode_top``, ``trigger_logits`` and ``event_logits``.
    """
    import torch
    from torch import nn

    class _Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            hidden = int(encoder.config.hidden_size)
            self.encoder = encoder
            self.marker = nn.Parameter(torch.randn(hidden) * 0.02)
            self.dropout = nn.Dropout(dropout)
            self.trigger = nn.Linear(hidden, n_tags("trigger"))
            self.dist = nn.Embedding(2 * _MAX_DIST + 1, dist_dim)
            self.pair = nn.Sequential(
                nn.Linear(3 * hidden + dist_dim, hidden), nn.GELU(), nn.Dropout(dropout)
            )
            self.heads = nn.ModuleDict({name: nn.Linear(hidden, n_tags(name)) for name in EVENT_LAYERS})

        def encode(self, input_ids: Any, attention_mask: Any, marker: Any = None) -> Any:
            emb = self.encoder.get_input_embeddings()(input_ids)
            if marker is not None:
                emb = emb + marker.unsqueeze(-1).to(emb.dtype) * self.marker
            return self.encoder(inputs_embeds=emb, attention_mask=attention_mask).last_hidden_state

        def encode_top(self, hidden: Any, attention_mask: Any, start: int) -> Any:
            """Run blocks ``start..`` on cached hidden states (BERT-like encoders)."""
            mask = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(hidden.dtype).min
            for layer in layer_stack(self.encoder)[start:]:
                out = layer(hidden, attention_mask=mask)
                hidden = out[0] if isinstance(out, tuple) else out
            return hidden

        def trigger_logits(self, h: Any) -> Any:
            return self.trigger(self.dropout(h))

        def event_logits(self, h: Any, marker: Any) -> dict[str, Any]:
            h = self.dropout(h)
            m = marker.unsqueeze(-1).to(h.dtype)
            n = m.sum(1)
            pooled = torch.where(n > 0, (h * m).sum(1) / n.clamp(min=1.0), h[:, 0])
            start = marker.float().argmax(1)  # first trigger token (0 = [CLS] without trigger)
            pos = torch.arange(h.shape[1], device=h.device)[None, :] - start[:, None]
            d = self.dist(pos.clamp(-_MAX_DIST, _MAX_DIST) + _MAX_DIST).to(h.dtype)
            t = pooled.unsqueeze(1).expand_as(h)
            x = self.pair(torch.cat([h, t, h * t, d], dim=-1))
            return {name: head(x) for name, head in self.heads.items()}

    return _Net()
