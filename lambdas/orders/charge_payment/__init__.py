"""ChargePayment: charges the order through the payment provider port."""
