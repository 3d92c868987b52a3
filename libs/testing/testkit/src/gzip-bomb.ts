import { constants, crc32, deflateRawSync } from "node:zlib";

const MIB = 1024 * 1024;

/**
 * A valid gzip body that inflates to `mebibytes` MiB of zeros, built in a few
 * milliseconds: one MiB of zeros is deflated once (about 1 KB, ending on a
 * full flush, so it is byte-aligned and stands alone) and repeated, then a
 * final empty block and the gzip trailer (CRC-32 and size of the whole) close
 * it. 1024 MiB gives a body of about 1 MB.
 */
export function gzipBomb(mebibytes: number): Buffer {
  const zeros = Buffer.alloc(MIB);
  const block = deflateRawSync(zeros, { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const last = deflateRawSync(Buffer.alloc(0));
  const header = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255]);
  let crc = 0;
  for (let i = 0; i < mebibytes; i++) crc = crc32(zeros, crc);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE((mebibytes * MIB) % 2 ** 32, 4);
  return Buffer.concat([header, ...Array.from({ length: mebibytes }, () => block), last, trailer]);
}
