package dev.varve.core.page;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A page's change tracking is what diff capture archives: a byte that changed in a chunk not reported would be
 * silently missing from history. Every kind of write, at random places, must be covered.
 */
class PageChangeTrackingTest {
    @Test
    void everyChangedByteLiesInAReportedChunk() {
        for (int size : new int[] {1024, 4096, 16384}) {
            SplittableRandom random = new SplittableRandom(size);
            Page page = new Page(ByteBuffer.allocateDirect(size + 64), 32, size);
            Page other = new Page(ByteBuffer.allocateDirect(size), 0, size);
            assertEquals(Page.ALL_CHANGED, page.takeChanged(), "a new page's old contents are unknown");
            ByteBuffer before = ByteBuffer.allocateDirect(size);
            for (int round = 0; round < 2_000; round++) {
                page.copyTo(before, 0);
                int writes = 1 + random.nextInt(4);
                for (int w = 0; w < writes; w++) write(page, other, random, size);
                long changed = page.takeChanged();
                for (int i = 0; i < size; i++) {
                    if (page.buffer().get(page.base() + i) != before.get(i))
                        assertTrue((changed & (1L << (i / page.chunkBytes()))) != 0, "byte " + i + " changed in an unreported chunk, size " + size);
                }
                assertEquals(0, page.takeChanged(), "taking the changes starts afresh");
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
        assertEquals(Page.ALL_CHANGED, page.takeChanged());
        page.changedWholly();
        assertEquals(Page.ALL_CHANGED, page.takeChanged());
        page.putLong(4088, 1);
        assertEquals(1L << 63, page.takeChanged(), "the last chunk");
        page.putLong(60, 1);
        assertEquals(3L, page.takeChanged(), "a long across the first chunk boundary marks both");
    }
}
