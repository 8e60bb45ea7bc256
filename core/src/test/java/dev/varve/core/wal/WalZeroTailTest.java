package dev.varve.core.wal;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link WalSegmentDescriptor#isZero}, which tells open where a segment's records end: one nonzero byte anywhere in the
 * range, at its ends or across the chunks it is compared in, is found; bytes outside the range are not looked at.
 */
class WalZeroTailTest {
    private static final int SIZE = 200 * 1024 + 5; // several 64 KiB chunks and a ragged end

    @Test
    void aZeroRangeIsZeroWhateverItsBounds() {
        ByteBuffer seg = ByteBuffer.allocateDirect(SIZE);
        assertTrue(WalSegmentDescriptor.isZero(seg, 0, SIZE));
        assertTrue(WalSegmentDescriptor.isZero(seg, 7, SIZE - 3));
        assertTrue(WalSegmentDescriptor.isZero(seg, 100, 100), "an empty range");
    }

    @Test
    void everyNonzeroByteIsFoundAndNoneOutsideTheRange() {
        for (int at : new int[]{0, 1, 65_535, 65_536, 65_537, 131_072 + 9, SIZE - 1}) {
            ByteBuffer seg = ByteBuffer.allocateDirect(SIZE);
            seg.put(at, (byte) 0x40);
            assertFalse(WalSegmentDescriptor.isZero(seg, 0, SIZE), "byte " + at);
            assertFalse(WalSegmentDescriptor.isZero(seg, at, at + 1), "byte " + at + " alone");
            assertTrue(WalSegmentDescriptor.isZero(seg, at + 1, SIZE), "after byte " + at);
            assertTrue(WalSegmentDescriptor.isZero(seg, 0, at), "before byte " + at);
        }
    }

    @Test
    void aHeapBufferAndAMovedPositionAreReadAbsolutely() {
        ByteBuffer seg = ByteBuffer.allocate(SIZE);
        seg.put(70_000, (byte) 1).position(80_000);
        assertFalse(WalSegmentDescriptor.isZero(seg, 60_000, 75_000));
        assertTrue(WalSegmentDescriptor.isZero(seg, 70_001, SIZE));
    }
}
