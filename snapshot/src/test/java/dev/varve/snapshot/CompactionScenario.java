package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;

/**
 * The retention histories the log compaction tests run: a snapshot after every step, at rank 1 except the few
 * {@link #rankTwo} ones, and which of them are live after the latest. Under the kept-for-good ones the snapshots
 * dropped lie after one still live, which a compaction that removes a prefix could never let go.
 */
enum CompactionScenario {
    /** keepLast(16): every snapshot dropped in declaration order. */
    KEEP_LAST(RankTreePolicy.levels(Retention.keepLast(16)), 16, true),
    /** The docs' case: keepLast(2), keepAll(), snapshot 1 at rank 2, kept for good, then rank-1 ones. */
    KEPT_FOR_GOOD(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepAll()), 2, true, 1),
    /**
     * keepLast(2), keepLast(1): snapshot 1 at rank 2 is retained by the compactions until the rank-2 snapshot 6,001
     * drops it — its drop must then outlive its retained record.
     */
    KEPT_THEN_DROPPED(RankTreePolicy.levels(Retention.keepLast(2), Retention.keepLast(1)), 2, false, 1, 6001);

    final RankTreePolicy policy;
    private final int keepLast;
    private final boolean keepAllRankTwo;
    private final long[] rankTwo;

    CompactionScenario(RankTreePolicy policy, int keepLast, boolean keepAllRankTwo, long... rankTwo) {
        this.policy = policy;
        this.keepLast = keepLast;
        this.keepAllRankTwo = keepAllRankTwo;
        this.rankTwo = rankTwo;
    }

    int rank(long id) {
        return Arrays.binarySearch(rankTwo, id) >= 0 ? 2 : 1;
    }

    /** The live snapshots once {@code latest} was declared, oldest first. */
    List<Long> live(long latest) {
        TreeSet<Long> ids = new TreeSet<>();
        for (long id = Math.max(1, latest - keepLast + 1); id <= latest; id++) ids.add(id);
        for (int i = rankTwo.length - 1; i >= 0; i--) {
            if (rankTwo[i] > latest) continue;
            ids.add(rankTwo[i]);
            if (!keepAllRankTwo) break; // keepLast(1) at level 2: the latest rank-2 one alone
        }
        return new ArrayList<>(ids);
    }

    /** The dropped snapshots once {@code latest} was declared, newest first. */
    List<Long> dropped(long latest) {
        List<Long> live = live(latest);
        List<Long> out = new ArrayList<>();
        for (long id = latest; id >= 1; id--) if (!live.contains(id)) out.add(id);
        return out;
    }
}
