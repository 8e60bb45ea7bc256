package dev.varve.checkpoint;

import dev.varve.config.RecoveryCompression;
import dev.varve.core.page.Page;
import org.xerial.snappy.Snappy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.ToLongFunction;

/**
 * How a page image is stored in a recovery file. Codes are persisted (one byte per entry), so a file can be read
 * whatever the current configuration says.
 * <ul>
 *   <li>{@code DISABLED}: the page as is.</li>
 *   <li>{@code SKIP_GARBAGE}: {@code int start, int end}, then the page without its unused middle [start, end),
 *       which the page layout knows (slot array grows up, cells grow down); restored as zeros.</li>
 *   <li>{@code SNAPPY}: snappy-java over the whole page.</li>
 * </ul>
 */
enum PageCodec {
    DISABLED, SKIP_GARBAGE, SNAPPY;

    static PageCodec of(RecoveryCompression c) {
        switch (c) {
            case SKIP_GARBAGE: return SKIP_GARBAGE;
            case SNAPPY: return SNAPPY;
            default: return DISABLED;
        }
    }

    /** Largest encoded size of a page. */
    static int maxEncodedBytes(int pageSize) {
        return Math.max(pageSize + 8, Snappy.maxCompressedLength(pageSize));
    }

    /**
     * Encodes {@code image} into direct buffer {@code out} from position 0; returns the encoded length.
     * {@code unusedRange} gives start&lt;&lt;32|end of a page's unused middle (empty when start &gt;= end).
     */
    int encode(Page image, ByteBuffer out, ToLongFunction<Page> unusedRange) {
        int pageSize = image.size();
        ByteBuffer page = image.buffer();
        int base = image.base();
        switch (this) {
            case DISABLED:
                out.put(0, page, base, pageSize);
                return pageSize;
            case SKIP_GARBAGE:
                return encodeSkipGarbage(image, unusedRange.applyAsLong(image), out, 0);
            default:
                try {
                    ByteBuffer in = page.duplicate();
                    in.limit(base + pageSize).position(base);
                    ByteBuffer o = out.duplicate();
                    o.clear();
                    return Snappy.compress(in, o);
                } catch (IOException e) {
                    throw new UncheckedIOException("snappy compression failed", e);
                }
        }
    }

    /**
     * The {@code SKIP_GARBAGE} encoding of {@code image}, whose unused middle is {@code range} ({@code start<<32|end};
     * empty when start &gt;= end), written at index {@code at} of {@code out}; returns the encoded length. Also the
     * body of the WAL's {@code PAGE_IMAGE_SKIP_GARBAGE} record.
     */
    static int encodeSkipGarbage(Page image, long range, ByteBuffer out, int at) {
        int pageSize = image.size();
        int start = (int) (range >>> 32);
        int end = (int) range;
        if (start < 0 || end > pageSize || start >= end) start = end = pageSize;
        ByteBuffer o = out.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        o.putInt(at, start).putInt(at + 4, end);
        out.put(at + 8, image.buffer(), image.base(), start);
        out.put(at + 8 + start, image.buffer(), image.base() + end, pageSize - end);
        return 8 + start + (pageSize - end);
    }

    /** Decodes {@code length} bytes at position 0 of direct {@code in} into a page image at [0, pageSize) of {@code page}. */
    void decode(ByteBuffer in, int length, ByteBuffer page, int pageSize) throws IOException {
        switch (this) {
            case DISABLED:
                if (length != pageSize) throw new IOException("plain page entry of " + length + " bytes, expected " + pageSize);
                page.put(0, in, 0, pageSize);
                return;
            case SKIP_GARBAGE: {
                ByteBuffer i = in.duplicate().order(ByteOrder.LITTLE_ENDIAN);
                int start = i.getInt(0);
                int end = i.getInt(4);
                if (start < 0 || end > pageSize || start > end || 8 + start + (pageSize - end) != length)
                    throw new IOException("skip-garbage entry with range [" + start + ", " + end + ") does not fit its " + length + " bytes");
                page.put(0, in, 8, start);
                for (int p = start; p < end; p++) page.put(p, (byte) 0);
                page.put(end, in, 8 + start, pageSize - end);
                return;
            }
            default: {
                ByteBuffer src = in.duplicate();
                src.position(0).limit(length);
                ByteBuffer dst = page.duplicate();
                dst.clear();
                int n = Snappy.uncompressedLength(src);
                if (n != pageSize) throw new IOException("snappy entry expands to " + n + " bytes, expected " + pageSize);
                Snappy.uncompress(src, dst);
            }
        }
    }
}
