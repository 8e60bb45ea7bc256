package dev.varve.snapshot;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.function.LongPredicate;

/**
 * The declarations the capture path counts, per rank level: from them a page's SavedAfter at each level follows
 * ({@link #savedAfterAt}). Held for the live snapshots, those open views read, and the latest at each level — not for
 * every snapshot ever declared: a dropped one is forgotten wherever it lies, so a snapshot kept for good does not keep
 * every declaration after it in the heap. Forgetting one only makes a page's SavedAfter at a level look older than it
 * is, and never past a snapshot read through that level (each is counted there, and stays), which records a pre-state
 * at a level that had it already, or with a wider (lo, hi] that no reader of the level falls in — never too few. The
 * latest at a level stays (it decides whether a level needs a pre-state at all) until a later one is counted there.
 * Guarded by the archive's state lock, like the registry that owns it.
 */
final class Declarations {
    private final int levels;
    /**
     * Declared ranks above 1 of the snapshots held; a snapshot not here was declared at rank 1, most are, and each
     * entry costs some 60 bytes of heap per retained snapshot.
     */
    private final TreeMap<Long, Integer> declaredRank = new TreeMap<>();
    /** Snapshots open views read, with their counts: their declarations are not forgotten (see {@link #pin}). */
    private final TreeMap<Long, Integer> pinned = new TreeMap<>();
    /** Per level (index j - 1), the snapshots held declared or ranked with rank &gt;= j. */
    private final List<SortedIds> atLevel = new ArrayList<>();

    Declarations(int levels) {
        this.levels = levels;
        for (int j = 0; j < levels; j++) atLevel.add(new SortedIds());
    }

    /** Forgets every declaration (recovery rebuilds them); pins stay with the views that hold them. */
    void clear() {
        declaredRank.clear();
        atLevel.forEach(SortedIds::clear);
    }

    /** Records the declaration of {@code id} at {@code rank} (its first record). */
    void declared(long id, int rank, LongPredicate live) {
        if (rank > 1) declaredRank.put(id, rank);
        counted(id, rank, live);
    }

    /**
     * Counts {@code id} at every level up to {@code rank} (a declaration or raise): pages first changed from now on
     * record their pre-state as of it there. The level's previous latest, if {@code live} no longer holds it and no view
     * reads it, is forgotten now that it is not the latest.
     */
    void counted(long id, int rank, LongPredicate live) {
        for (int j = 1; j <= Math.min(rank, levels); j++) countAt(j, id, live);
    }

    /**
     * Recovery: {@code level}'s Maplog already maps a pre-state to {@code id}, counted there when it was recorded. The
     * snapshot log may have let go of that declaration (a dropped snapshot, compacted away) while it was still the
     * level's latest; counted again, it stays the latest until a later one is counted there, as it did before — else
     * the next pre-state recorded there would be mapped to an older snapshot, after {@code id}'s (I7).
     */
    void mappedAt(int level, long id, LongPredicate live) {
        if (id > latestAt(level)) countAt(level, id, live);
    }

    private void countAt(int level, long id, LongPredicate live) {
        SortedIds at = atLevel.get(level - 1);
        long previous = at.last();
        at.add(id);
        if (previous != 0 && previous < id && !live.test(previous) && !pinned.containsKey(previous)) at.remove(previous);
    }

    /** The rank {@code id} was declared at (1 when not held). */
    int declaredRank(long id) {
        return declaredRank.getOrDefault(id, 1);
    }

    /** The latest snapshot counted at {@code level}, 0 when none. */
    long latestAt(int level) {
        return atLevel.get(level - 1).last();
    }

    /** A page's SavedAfter at {@code level}: the latest snapshot counted there not after its SavedAfter. */
    long savedAfterAt(int level, long savedAfter) {
        return atLevel.get(level - 1).floor(savedAfter);
    }

    /** Declarations held, over all levels (tests: it follows the live snapshots). */
    int remembered() {
        int n = declaredRank.size();
        for (SortedIds at : atLevel) n += at.size();
        return n;
    }

    /**
     * An open view of {@code id} pins its declaration: while it is open the declaration stays counted at its levels
     * even after the policy drops the snapshot, so that a page's first change after it still records its pre-state
     * at the level the view reads (else that level records none until a later snapshot is counted there, and then
     * the page's later pre-state, which the view would read as its own). Until {@link #unpin}.
     */
    void pin(long id) {
        pinned.merge(id, 1, Integer::sum);
    }

    /** The oldest snapshot an open view reads, MAX_VALUE when none. */
    long oldestViewed() {
        return pinned.isEmpty() ? Long.MAX_VALUE : pinned.firstKey();
    }

    /** A view of {@code id} closed; once none reads it, its declaration goes if {@code live} no longer holds it. */
    void unpin(long id, LongPredicate live) {
        pinned.computeIfPresent(id, (k, n) -> n == 1 ? null : n - 1);
        if (!live.test(id)) dropped(id);
    }

    /** Snapshot {@code id} was dropped: its declaration goes unless a view reads it or it is the latest at a level. */
    void dropped(long id) {
        if (pinned.containsKey(id)) return;
        declaredRank.remove(id);
        for (SortedIds at : atLevel) if (at.last() != id) at.remove(id);
    }

    /** Forgets the declarations older than {@code oldest}, the oldest live snapshot, unless a view reads them. */
    void forgetBefore(long oldest) {
        if (!pinned.isEmpty()) oldest = Math.min(oldest, pinned.firstKey()); // an open view's snapshot stays declared
        declaredRank.headMap(oldest).clear();
        for (SortedIds at : atLevel) at.forgetBelow(oldest);
    }
}
