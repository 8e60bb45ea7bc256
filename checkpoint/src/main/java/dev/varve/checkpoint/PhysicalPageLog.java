package dev.varve.checkpoint;

import dev.varve.core.memory.Frame;
import dev.varve.core.memory.PageWriteHook;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.wal.Wal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * {@code WAL_PHYSICAL} mode's torn-page protection: the first change of a page after a checkpoint mark logs the
 * page's full image; later changes log the byte ranges they changed (found by comparing with a copy taken before
 * the change). Like PostgreSQL's {@code full_page_writes}.
 *
 * <p>The generation moves on at each mark, under the checkpoint write lock; writers read it under the read lock,
 * which orders the two. Each writer thread keeps a few before-image buffers, one per page it holds write-latched
 * at once (a B+tree split holds up to three).
 */
final class PhysicalPageLog implements PageWriteHook {
    private static final int MAX_HELD = 16;
    private final Wal wal;
    private final int pageSize;
    private final ThreadLocal<Scratch> scratch;
    private volatile boolean enabled;
    private long generation;

    PhysicalPageLog(Wal wal, int pageSize) {
        this.wal = wal;
        this.pageSize = pageSize;
        this.scratch = ThreadLocal.withInitial(() -> new Scratch(pageSize));
    }

    /** Starts (or stops) logging; off during recovery, whose changes are covered by the checkpoint after it. */
    void enabled(boolean on) {
        enabled = on;
    }

    boolean enabled() {
        return enabled;
    }

    /** Called at each checkpoint mark, under the checkpoint write lock. */
    void nextGeneration() {
        generation++;
    }

    @Override
    public void beforeChange(Frame page, boolean fresh) {
        if (!enabled) return;
        Scratch s = scratch.get();
        int i = s.open(page);
        if (fresh || page.physicalImageGeneration() != generation) {
            s.fullImage[i] = true;
        } else {
            s.fullImage[i] = false;
            page.copyTo(s.before[i], 0);
        }
    }

    @Override
    public void afterChange(Frame page) {
        if (!enabled) return;
        Scratch s = scratch.get();
        int i = s.find(page);
        if (i < 0) return; // latched before logging was enabled
        try {
            if (s.fullImage[i]) {
                wal.append(RecordTypes.PAGE_IMAGE, PhysicalRecords.encodeImage(page, s.out));
                page.physicalImageGeneration(generation);
            } else {
                ByteBuffer delta = PhysicalRecords.encodeDelta(page, s.before[i], s.out);
                if (delta != null) wal.append(RecordTypes.PAGE_DELTA, delta);
            }
        } finally {
            s.close(i);
        }
    }

    /** Per-thread before-images of the pages the thread holds write-latched. */
    private static final class Scratch {
        final Frame[] held = new Frame[MAX_HELD];
        final ByteBuffer[] before = new ByteBuffer[MAX_HELD];
        final boolean[] fullImage = new boolean[MAX_HELD];
        final ByteBuffer out;
        final int pageSize;

        Scratch(int pageSize) {
            this.pageSize = pageSize;
            this.out = ByteBuffer.allocateDirect(pageSize * 2 + 64).order(ByteOrder.LITTLE_ENDIAN);
        }

        int open(Frame f) {
            for (int i = 0; i < MAX_HELD; i++) {
                if (held[i] == null) {
                    held[i] = f;
                    if (before[i] == null) before[i] = ByteBuffer.allocateDirect(pageSize).order(ByteOrder.LITTLE_ENDIAN);
                    return i;
                }
            }
            throw new IllegalStateException("more than " + MAX_HELD + " pages write-latched by one thread");
        }

        int find(Frame f) {
            for (int i = 0; i < MAX_HELD; i++) if (held[i] == f) return i;
            return -1;
        }

        void close(int i) {
            held[i] = null;
        }
    }
}
