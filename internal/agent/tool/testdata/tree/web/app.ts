export function main(): string {
  return "app";
}
