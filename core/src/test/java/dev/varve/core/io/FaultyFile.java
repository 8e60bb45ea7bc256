package dev.varve.core.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * What {@link FaultyFileIOFactory} knows about one file since its last durable point: the writes and truncations not
 * yet covered by an fsync (an undo/redo log), the last forced content of each mapped range (a shadow), and whether
 * the file was created and never forced.
 *
 * <p>Design note. Writes reach the real file at once, so the running process reads its own writes. Each logged
 * entry keeps the bytes it replaced and the file size before it, so {@link #powerLoss} can first undo every entry
 * exactly (newest first) back to the durable state, then redo the entries the dice keep, oldest first: kept whole,
 * dropped, or torn to a prefix of its 512-byte sectors. Mapped stores cannot be intercepted; they are found by
 * comparing the mapping with its shadow, which {@link MappedShadow#force} and {@link #force} refresh. Mapped ranges
 * are reverted before the write log is replayed; the store never mixes positional writes and mapped stores on one
 * file between two forces, and this class does not model that mix exactly.
 */
final class FaultyFile {
    static final int SECTOR_BYTES = 512;

    /**
     * One un-fsynced change: a write ({@code newBytes != null}) or a truncation to {@code offset}. A {@code landed}
     * write reached the platter before the power went ({@link FaultyFileIOFactory#powerCutAt}): a power loss keeps it.
     */
    private record Entry(long offset, byte[] newBytes, byte[] oldBytes, long sizeBefore, boolean landed) {
        boolean isWrite() {
            return newBytes != null;
        }
    }

    /** The last durable content of one mapped range and the live mapping it shadows. */
    final class MappedShadow {
        final long position;
        final int length;
        final ByteBuffer live;
        final byte[] durable;

        MappedShadow(long position, int length, ByteBuffer live) {
            this.position = position;
            this.length = length;
            this.live = live;
            this.durable = new byte[length];
            live.get(0, durable);
        }

        /** {@code [offset, offset + len)} of the range is durable now. */
        void force(int offset, int len) {
            synchronized (FaultyFile.this) {
                live.get(offset, durable, offset, len);
            }
        }
    }

    private Path path;
    private final List<Entry> log = new ArrayList<>();
    private final List<MappedShadow> shadows = new ArrayList<>();
    private boolean createdUnsynced;
    /** Created, and its directory not fsynced since: in strict mode the file vanishes at a power loss. */
    private boolean entryUnsynced;

    FaultyFile(Path path, boolean created) {
        this.path = path;
        this.createdUnsynced = created;
        this.entryUnsynced = created;
    }

    /** The directory holding this file was fsynced (a rename into it, a directory created in it). */
    synchronized void directorySynced() {
        entryUnsynced = false;
    }

    synchronized Path path() {
        return path;
    }

    synchronized void renamedTo(Path to) {
        path = to;
        entryUnsynced = false; // the rename fsynced the directory
    }

    synchronized int pendingEntries() {
        return log.size();
    }

    /**
     * Writes {@code src} (or only its first {@code keepBytes}, when not negative: a torn write of a dying process)
     * at {@code position} through {@code ch} and logs it as not yet durable.
     */
    synchronized void write(FileChannel ch, ByteBuffer src, long position, int keepBytes) throws IOException {
        write(ch, src, position, keepBytes, false);
    }

    /**
     * Writes {@code src} at {@code position} as a power cut tears it, and returns how many bytes landed: every sector
     * before the last one the write changes reaches the disk and survives a power loss, that sector and the rest
     * never do. Cutting there rather than at a random boundary makes the tear show: the page holding that sector gets
     * its new first sector (a page's checksum sits there) over old bytes, unless that sector is the page's first,
     * where a cut past a page's last change would leave a whole new page, and a cut at a page boundary whole old and
     * new pages.
     */
    synchronized int writeTornByPowerCut(FileChannel ch, ByteBuffer src, long position) throws IOException {
        byte[] now = new byte[src.remaining()];
        readFully(ch, ByteBuffer.wrap(now), position);
        long size = ch.size();
        int lastChanged = now.length - 1; // a byte past the end counts as changed: writing it grows the file
        while (lastChanged > 0 && position + lastChanged < size && now[lastChanged] == src.get(src.position() + lastChanged)) lastChanged--;
        int landed = (int) Math.max(0, (position + lastChanged) / SECTOR_BYTES * SECTOR_BYTES - position);
        write(ch, src, position, landed, true);
        return landed;
    }

    private void write(FileChannel ch, ByteBuffer src, long position, int keepBytes, boolean landed) throws IOException {
        int len = keepBytes < 0 ? src.remaining() : keepBytes;
        byte[] bytes = new byte[len];
        src.get(src.position(), bytes);
        long size = ch.size();
        byte[] old = new byte[(int) Math.max(0, Math.min(len, size - position))];
        readFully(ch, ByteBuffer.wrap(old), position);
        writeFully(ch, ByteBuffer.wrap(bytes), position);
        log.add(new Entry(position, bytes, old, size, landed));
        if (keepBytes < 0) src.position(src.limit());
    }

    synchronized void truncate(FileChannel ch, long newSize) throws IOException {
        long size = ch.size();
        byte[] cut = new byte[(int) Math.max(0, size - newSize)];
        readFully(ch, ByteBuffer.wrap(cut), newSize);
        ch.truncate(newSize);
        log.add(new Entry(newSize, null, cut, size, false));
    }

    /** Maps a range; its present content counts as durable (see the class note on mixing). */
    synchronized MappedShadow map(long position, int length, ByteBuffer live) {
        for (MappedShadow s : shadows) {
            if (s.position == position && s.length == length) return s;
            if (s.position < position + length && position < s.position + s.length) {
                throw new UnsupportedOperationException("overlapping mappings of different ranges of " + path + " are not modelled");
            }
        }
        MappedShadow s = new MappedShadow(position, length, live);
        shadows.add(s);
        return s;
    }

    /** fsync: everything written or stored so far is durable. */
    synchronized void force() {
        log.clear();
        createdUnsynced = false;
        for (MappedShadow s : shadows) s.live.get(0, s.durable);
    }

    /**
     * Puts the file where a power loss now could leave it, using {@code rnd} for every choice; afterwards the file
     * holds only durable content and this object is spent.
     */
    synchronized void powerLoss(Random rnd, boolean strictDirectoryEntries) throws IOException {
        if (!Files.exists(path)) return; // deleted: deletes are durable
        if (strictDirectoryEntries && entryUnsynced) {
            Files.delete(path); // POSIX: fsync of a new file does not make its directory entry durable
            return;
        }
        for (MappedShadow s : shadows) revertMapped(s, rnd);
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            for (int i = log.size() - 1; i >= 0; i--) undo(ch, log.get(i));
            if (createdUnsynced) {
                switch (rnd.nextInt(3)) {
                    case 0 -> {
                        Files.delete(path); // the directory entry never became durable (unlinking an open file is fine)
                        return;
                    }
                    case 1 -> {
                        ch.truncate(0); // the entry did, the data did not
                        return;
                    }
                    default -> {
                        // the data reached the disk as far as the log entries below say
                    }
                }
            }
            for (Entry e : log) redo(ch, e, rnd);
            ch.force(true);
        } finally {
            log.clear();
            shadows.clear();
            createdUnsynced = false;
        }
    }

    private void revertMapped(MappedShadow s, Random rnd) {
        int first = -1;
        int last = -1;
        for (int i = 0; i < s.length; i++) {
            if (s.live.get(i) != s.durable[i]) {
                if (first < 0) first = i;
                last = i;
            }
        }
        if (first < 0) return;
        // write-back may have got through a prefix of the dirty sectors before the power went
        int from = rnd.nextBoolean() ? first : (int) (tornCut(s.position + first, s.position + last + 1, rnd) - s.position);
        for (int i = from; i <= last; i++) s.live.put(i, s.durable[i]);
    }

    private static void undo(FileChannel ch, Entry e) throws IOException {
        if (e.isWrite()) {
            writeFully(ch, ByteBuffer.wrap(e.oldBytes), e.offset);
            if (ch.size() > e.sizeBefore) ch.truncate(e.sizeBefore);
        } else if (e.offset < e.sizeBefore) {
            writeFully(ch, ByteBuffer.wrap(e.oldBytes), e.offset);
        } else {
            ch.truncate(e.sizeBefore);
        }
    }

    private static void redo(FileChannel ch, Entry e, Random rnd) throws IOException {
        if (e.landed()) {
            writeFully(ch, ByteBuffer.wrap(e.newBytes), e.offset);
            return;
        }
        int fate = rnd.nextInt(10);
        if (!e.isWrite()) {
            if (fate < 5) ch.truncate(e.offset);
            return;
        }
        if (fate < 4) {
            writeFully(ch, ByteBuffer.wrap(e.newBytes), e.offset);
        } else if (fate < 7) {
            long cut = tornCut(e.offset, e.offset + e.newBytes.length, rnd);
            writeFully(ch, ByteBuffer.wrap(e.newBytes, 0, (int) (cut - e.offset)), e.offset);
        }
        // else dropped
    }

    /**
     * A sector boundary in {@code [from, to]} at which a write of {@code [from, to)} tears: everything before it
     * reached the disk, nothing after it. Returns {@code from} or {@code to} when no boundary lies strictly inside.
     */
    static long tornCut(long from, long to, Random rnd) {
        long firstBoundary = (from / SECTOR_BYTES + 1) * SECTOR_BYTES;
        if (firstBoundary >= to) return rnd.nextBoolean() ? from : to;
        long boundaries = (to - 1 - firstBoundary) / SECTOR_BYTES + 1;
        long pick = rnd.nextLong(boundaries + 1); // 0 = nothing kept
        return pick == 0 ? from : firstBoundary + (pick - 1) * SECTOR_BYTES;
    }

    static void readFully(FileChannel ch, ByteBuffer dst, long position) throws IOException {
        long p = position;
        while (dst.hasRemaining()) {
            int n = ch.read(dst, p);
            if (n < 0) break;
            p += n;
        }
    }

    static void writeFully(FileChannel ch, ByteBuffer src, long position) throws IOException {
        long p = position;
        while (src.hasRemaining()) p += ch.write(src, p);
    }
}
