"""Lightning-free device features: the ``devices`` argument and process binding, the generation's precision rules,
autocast op lists, the fused optimizers (and the fused AdamW conversion), and a loss mean kept on the device."""
