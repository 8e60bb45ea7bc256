package dev.varve.core.page;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A page's change tracking is what diff capture archives: a byte that changed in a chunk not reported would be
 * silently missing from history. Every kind of write, at random places, must be covered.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class PageChangeTrackingTest {
    @Test
    void everyChangedByteLiesInAReportedChunk() {
        for (int size : new int[] {1024, 4096, 16384}) {
            SplittableRandom random = new SplittableRandom(size);
            Page page = new Page(ByteBuffer.allocateDirect(size + 64), 32, size);
            Page other = new Page(ByteBuffer.allocateDirect(size), 0, size);
            assertTrue(Page.isAllChanged(page.takeChanged()), "a new page's old contents are unknown");
            ByteBuffer before = ByteBuffer.allocateDirect(size);
            for (int round = 0; round < 2_000; round++) {
                page.copyTo(before, 0);
                int writes = 1 + random.nextInt(4);
                for (int w = 0; w < writes; w++) write(page, other, random, size);
                long[] changed = page.takeChanged();
                for (int i = 0; i < size; i++) {
                    if (page.buffer().get(page.base() + i) != before.get(i))
                        assertTrue(marked(changed, i / page.chunkBytes()), "byte " + i + " changed in an unreported chunk, size " + size);
                }
                assertArrayEquals(new long[Page.MASK_LONGS], page.takeChanged(), "taking the changes starts afresh");
            }
        }
    }

    private static void write(Page page, Page other, SplittableRandom random, int size) {
        switch (random.nextInt(9)) {
            case 0 -> page.putByte(random.nextInt(size), random.nextInt());
            case 1 -> page.putShort(random.nextInt(size - 1), random.nextInt());
            case 2 -> page.putInt(random.nextInt(size - 3), random.nextInt());
            case 3 -> page.putLong(random.nextInt(size - 7), random.nextLong());
            case 4 -> {
                int length = random.nextInt(300);
                byte[] b = new byte[length];
                random.nextBytes(b);
                page.putBytes(random.nextInt(size - length + 1), b, 0, length);
            }
            case 5 -> {
                int length = random.nextInt(size / 2);
                page.move(random.nextInt(size - length + 1), random.nextInt(size - length + 1), length);
            }
            case 6 -> {
                int length = random.nextInt(200);
                page.zero(random.nextInt(size - length + 1), length);
            }
            case 7 -> {
                int length = random.nextInt(300);
                for (int i = 0; i < size; i += 8) other.putLong(i, random.nextLong());
                page.putBytes(random.nextInt(size - length + 1), other.buffer(), other.base() + random.nextInt(size - length + 1), length);
            }
            default -> {
                if (random.nextInt(20) == 0) {
                    other.putLong(random.nextInt(size - 7), random.nextLong());
                    other.copyTo(page);
                }
            }
        }
    }

    @Test
    void copyingIntoAPageOrLoadingItForgetsWhatChanged() {
        Page page = new Page(ByteBuffer.allocateDirect(4096), 0, 4096);
        page.takeChanged();
        page.copyFrom(ByteBuffer.allocateDirect(4096), 0);
        assertTrue(Page.isAllChanged(page.takeChanged()));
        page.changedWholly();
        page.putLong(8, 1); // a write while nothing is tracked marks nothing less than everything
        assertTrue(Page.isAllChanged(page.takeChanged()));
        page.putLong(4088, 1);
        assertArrayEquals(mask(Page.CHUNKS - 1, Page.CHUNKS - 1), page.takeChanged(), "the last chunk");
        page.putLong(4, 1);
        assertArrayEquals(mask(0, 1), page.takeChanged(), "a long across the first chunk boundary marks both");
        page.putBytes(500, new byte[100], 0, 100);
        assertArrayEquals(mask(500 / 8, 599 / 8), page.takeChanged(), "a hundred bytes across a long of the mask: chunks 62 to 74");
        page.zero(0, 4096);
        assertTrue(Page.isAllChanged(page.takeChanged()), "every chunk, through every long of the mask");
        page.putBytes(0, new byte[0], 0, 0);
        assertArrayEquals(new long[Page.MASK_LONGS], page.takeChanged(), "an empty write marks nothing");
    }

    /** Whether chunk {@code c} is set in {@code mask}. */
    private static boolean marked(long[] mask, int c) {
        return (mask[c >>> 6] & (1L << c)) != 0;
    }

    /** A mask of chunks [first, last]. */
    private static long[] mask(int first, int last) {
        long[] m = new long[Page.MASK_LONGS];
        for (int c = first; c <= last; c++) m[c >>> 6] |= 1L << c;
        return m;
    }
}
