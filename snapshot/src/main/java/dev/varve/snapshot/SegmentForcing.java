package dev.varve.snapshot;

import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.IntSupplier;

/**
 * Which of a {@link Pagelog}'s segments were written since their last force, and their forcing: the archiver leaves
 * filled segments unforced for the checkpoint (an fsync on its path would stall the captures behind it), up to
 * {@link #MAX_UNFORCED_FILLED} of them, and the checkpoint forces them. The bookkeeping is guarded by the volume's
 * monitor ({@code lock}), which every caller but {@link #forceFilled} already holds.
 */
final class SegmentForcing {
    /** Filled segments left unforced for the next checkpoint, at most; each holds a descriptor until forced. */
    static final int MAX_UNFORCED_FILLED = 8;
    private final Object lock;
    private final Map<Integer, PartFile> segments;
    private final DescriptorBudget budget;
    private final Path dir;
    /** The volume's first segment not reclaimed, and its last one. */
    private final IntSupplier firstSegment;
    private final IntSupplier lastSegment;
    /** The first segment written since the last force; the segments from it on are forced by the next flush. */
    private int unforcedFrom = Integer.MAX_VALUE;

    SegmentForcing(Object lock, Map<Integer, PartFile> segments, DescriptorBudget budget, Path dir, IntSupplier firstSegment, IntSupplier lastSegment) {
        this.lock = lock;
        this.segments = segments;
        this.budget = budget;
        this.dir = dir;
        this.firstSegment = firstSegment;
        this.lastSegment = lastSegment;
    }

    /** Holding the volume's monitor: segment {@code seg} was written, not forced. */
    void written(int seg) {
        unforcedFrom = Math.min(unforcedFrom, seg);
    }

    /**
     * Holding the volume's monitor. A segment written since its last force keeps its descriptor (its fsync must go
     * through it), so the segments filled since the last checkpoint are bounded here, not by the checkpoint: past
     * {@link #MAX_UNFORCED_FILLED} of them the oldest is forced when segment {@code seg} begins (an fsync on the
     * archiver's path again, but only when more than that many segments fill between two checkpoints).
     */
    void forceOldestFilled(int seg) throws IOException {
        while (unforcedFrom != Integer.MAX_VALUE && seg - Math.max(unforcedFrom, firstSegment.getAsInt()) > MAX_UNFORCED_FILLED) {
            int oldest = Math.max(unforcedFrom, firstSegment.getAsInt());
            PartFile f = segments.get(oldest);
            if (f != null) f.force();
            unforcedFrom = oldest + 1;
        }
    }

    /**
     * Forces the segments filled since the last force without the volume's monitor: nothing writes them any more, and
     * the archiver goes on appending to the last one meanwhile. The checkpoint's flush calls it before it stops the
     * archiver's appends for {@link Pagelog#force}, which is then left with the last segment's records to sync.
     */
    void forceFilled() {
        int from;
        int to;
        synchronized (lock) {
            from = Math.max(firstSegment.getAsInt(), unforcedFrom);
            to = lastSegment.getAsInt() - 1;
        }
        for (int s = from; s <= to; s++) {
            PartFile f = segments.get(s);
            if (f == null) continue; // reclaimed meanwhile: nothing of it is needed
            try {
                f.force();
            } catch (IOException e) {
                throw new StorageException("Pagelog fsync failed: " + e.getMessage(), f.path(), e);
            }
        }
        try {
            budget.trim(); // forced, they may let their descriptors go
        } catch (IOException e) {
            throw new StorageException("cannot close a Pagelog segment: " + e.getMessage(), dir, e);
        }
        synchronized (lock) {
            if (unforcedFrom <= to) unforcedFrom = to + 1; // the archiver only appends to segments after to
        }
    }

    /** Holding the volume's monitor: forces the segments written since the last force, up to and including {@code upTo}. */
    void forceSegments(int upTo) {
        if (segments.isEmpty()) return;
        for (int s = Math.max(firstSegment.getAsInt(), Math.min(unforcedFrom, upTo + 1)); s <= upTo; s++) {
            try {
                segments.get(s).force();
            } catch (IOException e) {
                throw new StorageException("Pagelog fsync failed: " + e.getMessage(), segments.get(s).path(), e);
            }
        }
        unforcedFrom = Integer.MAX_VALUE;
    }
}
