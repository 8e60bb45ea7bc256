package dev.varve.snapshot;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;
import java.util.function.Predicate;

/**
 * The ranked extents on disk: the current one of each lazily ranked snapshot that was copied, and the retired ones —
 * replaced by a later copy, or of dropped snapshots — kept until no open view reads them. Lazy ranking adds them,
 * views read them, reclamation keeps their bases and deletes the retired ones. Guarded by the archive's state lock:
 * every caller holds it.
 */
final class RankedExtents {
    /** The current ranked extent of each lazily ranked snapshot that was copied. */
    private final Map<Long, RankedExtent> current = new HashMap<>();
    /** Extents replaced by a later copy or of dropped snapshots, deleted once no open view reads them. */
    private final List<RankedExtent> retired = new ArrayList<>();

    /** The extent snapshot {@code id} reads, or null. */
    RankedExtent of(long id) {
        return current.get(id);
    }

    /** Recovery: the extents the snapshots still live read, nothing retired. */
    void recovered(Map<Long, RankedExtent> kept) {
        current.clear();
        current.putAll(kept);
        retired.clear();
    }

    /** A copy of {@code id} wrote {@code extent} (null: nothing to copy); the one it read before, if any, retires. */
    void copied(long id, RankedExtent extent, RankedExtent previous) {
        if (extent != null) current.put(id, extent);
        else current.remove(id);
        if (previous != null) retired.add(previous);
    }

    /** Every extent still on disk, current or retired. */
    List<RankedExtent> onDisk() {
        List<RankedExtent> all = new ArrayList<>(current.values());
        all.addAll(retired);
        return all;
    }

    /** Adds the bytes of every extent on disk to its level's count ({@code perLevel}, level 1 first). */
    void addBytes(long[] perLevel) {
        for (RankedExtent e : current.values()) perLevel[e.level() - 1] += e.bytes();
        for (RankedExtent e : retired) perLevel[e.level() - 1] += e.bytes();
    }

    /** The lowest address of volume {@code level} a ranked extent still on disk uses as a base. */
    long minPin(int level) {
        long min = Long.MAX_VALUE;
        for (RankedExtent e : current.values()) min = Math.min(min, e.pin(level));
        for (RankedExtent e : retired) min = Math.min(min, e.pin(level));
        return min;
    }

    /**
     * Retires the extents of snapshots no longer {@code live}, and takes out the retired ones no open view reads
     * ({@code read}): the caller deletes those files.
     */
    List<RankedExtent> takeUnused(LongPredicate live, Predicate<RankedExtent> read) {
        List<RankedExtent> unused = new ArrayList<>();
        for (var it = current.values().iterator(); it.hasNext(); ) {
            RankedExtent e = it.next();
            if (!live.test(e.snapshot())) {
                retired.add(e);
                it.remove();
            }
        }
        for (var it = retired.iterator(); it.hasNext(); ) {
            RankedExtent e = it.next();
            if (!read.test(e)) {
                unused.add(e);
                it.remove();
            }
        }
        return unused;
    }
}
