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
                return compress(page, base, pageSize, out, 0);
        }
    }

    /** Snappy-compresses {@code [from, from + length)} of direct {@code in} to index {@code at} of direct {@code out}; returns the compressed length. */
    static int compress(ByteBuffer in, int from, int length, ByteBuffer out, int at) {
        try {
            ByteBuffer i = in.duplicate();
            i.limit(from + length).position(from);
            ByteBuffer o = out.duplicate();
            o.clear().position(at);
            return Snappy.compress(i, o);
        } catch (IOException e) {
            throw new UncheckedIOException("snappy compression failed", e);
        }
    }

    /**
     * Uncompresses the snappy block {@code [from, from + length)} of direct {@code in} to index 0 of direct {@code out};
     * returns its length, which must be {@code expected} (-1: at most {@code out}'s capacity).
     *
     * @throws IOException if the block is not snappy's or does not expand to that length
     */
    static int uncompress(ByteBuffer in, int from, int length, ByteBuffer out, int expected) throws IOException {
        ByteBuffer src = in.duplicate();
        src.limit(from + length).position(from);
        int n = Snappy.uncompressedLength(src);
        if (expected >= 0 ? n != expected : n > out.capacity())
            throw new IOException("snappy entry expands to " + n + " bytes, expected " + (expected >= 0 ? expected : "at most " + out.capacity()));
        ByteBuffer dst = out.duplicate();
        dst.clear();
        return Snappy.uncompress(src, dst);
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
            default:
                uncompress(in, 0, length, page, pageSize);
        }
    }
}
