package dev.varve.snapshot;

import java.io.IOException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * How many of a log's {@link PartFile}s may hold a descriptor at once, beyond those that must (the file being
 * appended to, and those written since their last force): past it, the least recently used lets its descriptor go.
 * Enough for a reader going through a few files in turn; a reader that comes back to one opens it again.
 */
final class DescriptorBudget {
    private final int max;
    private final Set<PartFile> open = ConcurrentHashMap.newKeySet();

    /** At most {@code max} releasable files open at once. */
    DescriptorBudget(int max) {
        if (max < 1) throw new IllegalArgumentException("a descriptor budget must allow one file at least, was " + max);
        this.max = max;
    }

    /** {@code f} took a descriptor: counts it, and lets others go if there are too many now. */
    void opened(PartFile f) throws IOException {
        track(f);
        trim();
    }

    /** {@code f} took a descriptor: counts it from now on. */
    void track(PartFile f) {
        open.add(f);
    }

    /** Lets the least recently used releasable files go while more than the budget hold a descriptor. */
    void trim() throws IOException {
        while (true) {
            PartFile victim = null;
            synchronized (this) {
                int releasable = 0;
                for (PartFile p : open) {
                    if (!p.releasable()) continue;
                    releasable++;
                    if (victim == null || p.lastUse() < victim.lastUse()) victim = p;
                }
                if (releasable <= max) return;
                open.remove(victim);
            }
            // outside the monitor: it waits for the reads under way on that file; one written meanwhile stays open
            if (!victim.release()) open.add(victim);
        }
    }

    /** {@code f} let its descriptor go (or was closed). */
    void released(PartFile f) {
        open.remove(f);
    }
}
