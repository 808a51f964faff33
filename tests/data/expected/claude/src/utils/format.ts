// Formatting helpers shared by the API responses.

export function formatDate(when: Date): string {
  return when.toISOString().slice(0, 10);
}

export function formatPrice(cents: number, currency = "EUR"): string {
  return `${(cents / 100).toFixed(2)} ${currency}`;
}
