package dev.varve.snapshot;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Capture counts answer as a sorted map of counts would, through growth, forgetting, out-of-order counts and clears. */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class CaptureCountsTest {
    @Test
    void countsLikeASortedMap() {
        SplittableRandom random = new SplittableRandom(5);
        CaptureCounts counts = new CaptureCounts();
        TreeMap<Long, Long> model = new TreeMap<>();
        long forgotten = Long.MIN_VALUE;
        long latest = 1;
        for (int step = 0; step < 200_000; step++) {
            int op = random.nextInt(1000);
            if (op < 900) {
                if (random.nextInt(4) == 0) latest++; // a new snapshot; captures come in its order
                long id = random.nextInt(50) == 0 ? latest - random.nextInt(40) : latest; // now and then an older one
                int n = 1 + random.nextInt(3);
                counts.add(id, n);
                if (id >= forgotten) model.merge(id, (long) n, Long::sum);
            } else if (op < 990) {
                long oldest = latest - random.nextInt(60);
                counts.forgetBelow(oldest);
                forgotten = Math.max(forgotten, oldest);
                model.headMap(forgotten).clear();
            } else if (op == 999 && random.nextInt(20) == 0) {
                counts.clear();
                model.clear();
                forgotten = Long.MIN_VALUE;
            }
            long probe = latest - random.nextInt(80);
            assertEquals(model.getOrDefault(probe, 0L), counts.get(probe), "count of snapshot " + probe + " at step " + step);
        }
    }

    /** A trim moves the run's front past a live snapshot: its count is set aside and still counts, the others' go. */
    @Test
    void aTrimSetsTheLiveCountsAsideAndForgetsTheRest() {
        CaptureCounts counts = new CaptureCounts();
        for (long id = 1; id <= 100; id++) counts.add(id, id);
        counts.trim(90, new long[]{1, 50, 95});
        assertEquals(11, counts.span());
        assertEquals(1, counts.get(1));
        assertEquals(50, counts.get(50));
        assertEquals(0, counts.get(49), "forgotten");
        assertEquals(95, counts.get(95));
        counts.add(50, 5); // a pack's tail given back, say
        counts.add(49, 5); // forgotten: not counted again
        assertEquals(55, counts.get(50));
        assertEquals(0, counts.get(49));
        counts.forgetBelow(60);
        assertEquals(0, counts.get(50), "no longer live");
        counts.add(101, 1);
        assertEquals(1, counts.get(101));
        counts.clear();
        counts.add(1, 7); // after a clear every id counts again
        assertEquals(7, counts.get(1));
    }

    /**
     * A live snapshot the run does not reach yet at a trim (its captures still to come, as in a recount) is set aside
     * too; one set aside and dropped since goes at the next trim, not for the rest of the store's life.
     */
    @Test
    void aTrimSetsAsideTheLiveOnesNotReachedYetAndForgetsThoseDroppedSince() {
        CaptureCounts counts = new CaptureCounts();
        for (long id = 1; id <= 10; id++) counts.add(id, id);
        counts.trim(100, new long[]{5, 50});
        assertEquals(5, counts.get(5));
        counts.add(50, 7); // beyond the run when it was trimmed
        assertEquals(7, counts.get(50));
        counts.add(120, 1);
        counts.trim(200, new long[]{50}); // 5 was dropped since
        assertEquals(0, counts.get(5), "dropped since it was set aside");
        assertEquals(7, counts.get(50));
    }

    @Test
    void aCountFarAboveTheFirstGrowsTheRunAndForgettingPastTheEndEmptiesIt() {
        CaptureCounts counts = new CaptureCounts();
        counts.add(10, 1);
        counts.add(10_000, 2);
        assertEquals(1, counts.get(10));
        assertEquals(0, counts.get(5_000));
        assertEquals(2, counts.get(10_000));
        counts.forgetBelow(20_000);
        assertEquals(0, counts.get(10_000));
        counts.add(10_000, 1); // forgotten: not counted again
        assertEquals(0, counts.get(10_000));
        counts.add(20_001, 4);
        assertEquals(4, counts.get(20_001));
        assertEquals(0, counts.get(20_000));
    }
}
