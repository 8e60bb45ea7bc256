package dev.varve.snapshot;

import java.util.Arrays;

/**
 * Turns captures, met in archive order, into bytes per snapshot ({@link RetentionEnforcer#captured}): a whole page
 * takes its record; a diff takes its pack's body from its offset to the end and gives the previous diff of the same
 * pack back what lies past its own start. The pack met last per level (volume) is the state that carries over from one
 * capture to the next, so a count resumed after a prefix (the reclaimed part {@link CaptureCountsFile} keeps) comes to
 * the same figures as one over the whole Maplog.
 */
final class CaptureTally {
    /** Where the bytes go: {@code bytes} more (fewer when negative) for {@code snapshot}. */
    interface Sink {
        void add(long snapshot, long bytes);
    }

    private final int pageSize;
    /** Per level (volume), the pack record of the last diff counted, -1 when none; and the snapshot it was captured for. */
    final long[] lastPack;
    final long[] lastInPack;

    CaptureTally(int pageSize, int levels) {
        this.pageSize = pageSize;
        this.lastPack = new long[levels + 1];
        this.lastInPack = new long[levels + 1];
        reset();
    }

    /** No pack met yet. */
    void reset() {
        Arrays.fill(lastPack, -1);
        Arrays.fill(lastInPack, 0);
    }

    /** Carries on from the packs a count of the Maplog before met last ({@link CaptureCountsFile}). */
    void resumeFrom(long[] packs, long[] inPacks) {
        System.arraycopy(packs, 0, lastPack, 0, Math.min(packs.length, lastPack.length));
        System.arraycopy(inPacks, 0, lastInPack, 0, Math.min(inPacks.length, lastInPack.length));
    }

    /** A pre-state first captured for {@code snapshot} is stored at {@code location}: its bytes, with its level-1 mapping. */
    void captured(long snapshot, long location, Sink sink) {
        int level = ArchiveEncoding.levelOf(location);
        long address = ArchiveEncoding.addressOf(location);
        int offset = PagelogDescriptor.entryOffsetOf(address);
        long bytes = MaplogDescriptor.ENTRY_SIZE;
        if (offset == 0) { // a whole page
            bytes += PagelogDescriptor.RECORD_HEADER_SIZE + pageSize;
        } else {
            long record = PagelogDescriptor.recordOf(address);
            if (record == lastPack[level]) {
                long tail = pageSize - offset;
                sink.add(lastInPack[level], -tail); // a no-op for a snapshot forgotten since
                bytes += tail;
            } else {
                lastPack[level] = record;
                bytes += PagelogDescriptor.RECORD_HEADER_SIZE + pageSize;
            }
            lastInPack[level] = snapshot;
        }
        sink.add(snapshot, bytes);
    }
}
