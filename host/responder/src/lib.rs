//! CPU coprocessor functions: echo, Steane, C symbols, chosen per message by decoder_id
