"""RefundPayment: compensation that refunds the charge of a failed saga attempt."""
