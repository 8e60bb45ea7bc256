package dev.varve.snapshot;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The byte-range diff ranked extents store: diff then apply gives back the page, whatever the page. */
@Timeout(60)
class PageDiffTest {
    private static final int PAGE = 4096;

    @Test
    void randomPagesRoundTrip() {
        long seed = System.nanoTime();
        System.out.println("PageDiffTest seed " + seed); // rerun a failure with this seed
        Random random = new Random(seed);
        int[] ranges = PageDiff.rangesFor(PAGE);
        for (int round = 0; round < 500; round++) {
            ByteBuffer base = randomPage(random);
            ByteBuffer page = copy(base);
            int spans = random.nextInt(40);
            for (int s = 0; s < spans; s++) {
                int at = random.nextInt(PAGE);
                int length = 1 + random.nextInt(Math.min(64, PAGE - at));
                for (int i = at; i < at + length; i++) page.put(i, (byte) random.nextInt());
            }
            int n = PageDiff.diff(base, page, PAGE, ranges);
            assertRangesSound(ranges, n, base, page, "seed " + seed + " round " + round);
            assertArrayEquals(page.array(), roundTrip(base, page, ranges, n), "seed " + seed + " round " + round);
        }
    }

    @Test
    void equalPagesHaveAnEmptyDiff() {
        ByteBuffer base = randomPage(new Random(1));
        int[] ranges = PageDiff.rangesFor(PAGE);
        assertEquals(0, PageDiff.diff(base, copy(base), PAGE, ranges));
        assertArrayEquals(base.array(), roundTrip(base, copy(base), ranges, 0));
    }

    @Test
    void aPageDifferentEverywhereIsOneWholePageRange() {
        ByteBuffer base = randomPage(new Random(2));
        ByteBuffer page = copy(base);
        for (int i = 0; i < PAGE; i++) page.put(i, (byte) ~base.get(i));
        int[] ranges = PageDiff.rangesFor(PAGE);
        assertEquals(1, PageDiff.diff(base, page, PAGE, ranges));
        assertEquals(0, ranges[0]);
        assertEquals(PAGE, ranges[1]);
        assertEquals(PAGE, PageDiff.payloadBytes(ranges, 1));
        assertArrayEquals(page.array(), roundTrip(base, page, ranges, 1));
    }

    @Test
    void shortGapsAreCopiedAndLongOnesSplit() {
        ByteBuffer base = ByteBuffer.allocate(PAGE);
        ByteBuffer page = copy(base);
        page.put(100, (byte) 1).put(100 + PageDiff.MIN_GAP, (byte) 1); // MIN_GAP - 1 equal bytes between: one range
        page.put(1000, (byte) 1).put(1000 + PageDiff.MIN_GAP + 1, (byte) 1); // MIN_GAP equal bytes between: two ranges
        int[] ranges = PageDiff.rangesFor(PAGE);
        assertEquals(3, PageDiff.diff(base, page, PAGE, ranges));
        assertArrayEquals(new int[]{100, PageDiff.MIN_GAP + 1, 1000, 1, 1000 + PageDiff.MIN_GAP + 1, 1}, Arrays.copyOf(ranges, 6));
    }

    /** Ranges ascend, stay in the page, start and end on a differing byte, and cover every difference. */
    private static void assertRangesSound(int[] ranges, int n, ByteBuffer base, ByteBuffer page, String context) {
        boolean[] covered = new boolean[PAGE];
        int end = 0;
        for (int i = 0; i < n; i++) {
            int off = ranges[2 * i];
            int len = ranges[2 * i + 1];
            assertTrue(off >= end && len > 0 && off + len <= PAGE, context + ": range " + i);
            assertTrue(base.get(off) != page.get(off) && base.get(off + len - 1) != page.get(off + len - 1), context + ": range " + i + " ends");
            for (int j = off; j < off + len; j++) covered[j] = true;
            end = off + len;
        }
        for (int j = 0; j < PAGE; j++) assertTrue(covered[j] || base.get(j) == page.get(j), context + ": byte " + j + " differs outside every range");
    }

    /** The page rebuilt from the base and the diff's payload, as an extent record carries it. */
    private static byte[] roundTrip(ByteBuffer base, ByteBuffer page, int[] ranges, int n) {
        ByteBuffer payload = ByteBuffer.allocate(PageDiff.payloadBytes(ranges, n));
        assertEquals(payload.capacity(), PageDiff.putPayload(page, 0, ranges, n, payload, 0));
        ByteBuffer rebuilt = ByteBuffer.allocate(PAGE + 16);
        rebuilt.put(16, base, 0, PAGE);
        PageDiff.apply(rebuilt, 16, ranges, n, payload, 0);
        byte[] out = new byte[PAGE];
        rebuilt.get(16, out);
        return out;
    }

    private static ByteBuffer randomPage(Random random) {
        byte[] b = new byte[PAGE];
        random.nextBytes(b);
        return ByteBuffer.wrap(b);
    }

    private static ByteBuffer copy(ByteBuffer b) {
        return ByteBuffer.wrap(b.array().clone());
    }
}
