"""XLM-RoBERTa (XLMRobertaModel): BERT's layers ("Copied from BERT" in Transformers) with
RoBERTa's embeddings, whose position ids are offset past the padding index and computed from
the input ids with cumsum."""
import torch
from torch import nn

from common import mask_input, rename_classes, token_input
from families import bert

FAMILY = "xlm-roberta"


def create_position_ids_from_input_ids(input_ids, padding_idx):
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = torch.cumsum(mask, dim=1).type_as(mask) * mask
    return incremental_indices.long() + padding_idx


class XLMRobertaEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.padding_idx = config["pad_token_id"]
        self.word_embeddings = nn.Embedding(config["vocab_size"], config["hidden_size"], padding_idx=self.padding_idx)
        self.position_embeddings = nn.Embedding(config["max_position_embeddings"], config["hidden_size"], padding_idx=self.padding_idx)
        self.token_type_embeddings = nn.Embedding(config["type_vocab_size"], config["hidden_size"])
        self.LayerNorm = nn.LayerNorm(config["hidden_size"], eps=config["layer_norm_eps"])
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids):
        position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        token_type_ids = torch.zeros_like(input_ids)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(embeddings))


class XLMRobertaModel(bert.BertModel):
    def __init__(self, config):
        super().__init__(config)
        self.embeddings = XLMRobertaEmbeddings(config)
        rename_classes(self, "Bert", "XLMRoberta")


VARIANTS = {
    "xlm-roberta-tiny": dict(bert._config(64, 2, 2, 1000), pad_token_id=1, max_position_embeddings=80),
    "xlm-roberta-h192": dict(bert._config(192, 1, 3, 1003), pad_token_id=1, max_position_embeddings=80),
}


def build(name, config):
    model = XLMRobertaModel(config)
    card = {
        "name": name,
        "family": FAMILY,
        "description": "XLM-RoBERTa-style embedding model (position ids offset by the padding index)",
        "inputs": [token_input("input_ids", 1, 16, config["vocab_size"]), mask_input("attention_mask", 1, 16)],
        "outputs": [{"name": "last_hidden_state", "kind": "hidden_states"}, {"name": "pooler_output", "kind": "embeddings"}],
        "config": dict(config, model_type="xlm-roberta"),
    }
    return model, card, "trace", config["hidden_size"]
