/** CRC16-CCITT (XMODEM), the checksum Redis Cluster hashes keys with, as a 256-entry table. */
const TABLE = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});

/**
 * The Redis Cluster slot of `key` (0–16383): the CRC16 of its hash tag (the text between the first `{` and
 * the next `}`, when not empty) or of the whole key, over its UTF-8 bytes. Every key of one lock shares a
 * tag (see redis-keys.ts), so this is the lock's slot.
 */
export function redisKeySlot(key: string): number {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(hashed, 'utf8')) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc % 16384;
}
