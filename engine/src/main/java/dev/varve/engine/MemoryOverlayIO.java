package dev.varve.engine;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.MappedRegion;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * The file system of a read-only open: every file is read from disk, and every change — a recovery's restored
 * pages, a cut WAL tail, a checkpoint's markers, a created or deleted file — lands in memory only. So the ordinary
 * open and recovery code runs unchanged and the store reads as it would after a real recovery, while not one byte
 * of the directory changes. Disk files are opened for reading only.
 *
 * <p>Memory: changed 4 KiB blocks are kept on the heap; a file mapped into memory (a WAL segment) is held whole in
 * a direct buffer (the WAL reads it with atomic VarHandle access, which heap buffers do not support on every JDK)
 * while open, and dropped at its last close unless it was changed.
 */
final class MemoryOverlayIO implements FileIOFactory {
    private static final int BLOCK = 4096;
    /** A deleted file, in {@link #files}. */
    private static final Layer DELETED = new Layer(null, 0);

    /** Files this overlay has seen, by absolute path; a path not here is the disk file as it is. */
    private final Map<Path, Layer> files = new HashMap<>();
    /**
     * Disk files a rename replaced while they were still there (not deleted first) — rewritten from what was read of
     * them (a log rewritten whole, as recovery does the drop log), not cut — each with the bytes of it the replaced
     * file still held (all of them, unless a truncate cut a torn tail first).
     */
    private final Map<Path, Long> rewritten = new HashMap<>();

    private static Path key(Path p) {
        return p.toAbsolutePath().normalize();
    }

    @Override
    public synchronized FileIO open(Path file, boolean create) throws IOException {
        Path k = key(file);
        Layer l = files.get(k);
        if (l == null && Files.isRegularFile(k)) {
            l = new Layer(k, Files.size(k));
            files.put(k, l);
        } else if (l == null || l == DELETED) {
            if (!create) throw new NoSuchFileException(file.toString());
            l = new Layer(null, 0);
            files.put(k, l);
        }
        return l.handle(file);
    }

    @Override
    public synchronized boolean exists(Path file) {
        Layer l = files.get(key(file));
        return l == null ? Files.exists(key(file)) : l != DELETED;
    }

    @Override
    public synchronized void delete(Path file) {
        files.put(key(file), DELETED);
        rewritten.remove(key(file));
    }

    /** Entries change in memory only: there is nothing to make durable. */
    @Override
    public void forceDirectory(Path dir) {
    }

    @Override
    public synchronized void atomicMove(Path from, Path to) throws IOException {
        Path f = key(from);
        Layer l = files.get(f);
        if (l == null && Files.isRegularFile(f)) l = new Layer(f, Files.size(f));
        if (l == null || l == DELETED) throw new NoSuchFileException(from.toString());
        Path t = key(to);
        Layer replaced = files.get(t);
        long kept = replaced == null ? (Files.isRegularFile(t) ? Long.MAX_VALUE : -1) : rewritten.getOrDefault(t, replaced.diskBytesKept(t));
        if (kept >= 0) rewritten.put(t, kept); // else it was deleted first
        files.put(f, DELETED);
        rewritten.remove(f);
        files.put(t, l);
    }

    /**
     * The files in {@code dir} whose names start with {@code prefix}, sorted, each as {@code dir.resolve(name)} as the
     * standard factory gives them: callers compare them with paths they resolve from the same directory (the
     * overlay's absolute keys made every ranked extent of a store opened by a relative path look stray).
     */
    @Override
    public synchronized java.util.List<Path> list(Path dir, String prefix) throws IOException {
        Path d = key(dir);
        TreeSet<String> names = new TreeSet<>();
        if (Files.isDirectory(d)) {
            try (Stream<Path> s = Files.list(d)) {
                s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(prefix)).forEach(names::add);
            }
        }
        for (Map.Entry<Path, Layer> e : files.entrySet()) {
            Path p = e.getKey();
            if (!d.equals(p.getParent()) || !p.getFileName().toString().startsWith(prefix)) continue;
            if (e.getValue() == DELETED) names.remove(p.getFileName().toString());
            else names.add(p.getFileName().toString());
        }
        java.util.List<Path> out = new java.util.ArrayList<>(names.size());
        for (String n : names) out.add(dir.resolve(n));
        return out;
    }

    /**
     * How many bytes of the disk file {@code file} this overlay still reads: all of them ({@code Long.MAX_VALUE}) unless
     * a truncate cut it (the bytes before the cut), or it was deleted, or a file created under its name once it was
     * (-1: none). After a read-only open this is what its recovery keeps of each file, which the files' check needs to
     * tell a tail recovery cuts from damage. A file mapped whole (a WAL segment) counts as kept whole, and so does one
     * a rename replaced while it was there keeps what it held then: it was read to be rewritten.
     */
    synchronized long diskBytesKept(Path file) {
        Path k = key(file);
        Layer l = files.get(k);
        if (l == null) return Long.MAX_VALUE;
        return rewritten.containsKey(k) ? rewritten.get(k) : l.diskBytesKept(k);
    }

    @Override
    public void createDirectories(Path dir) {
        // a directory that does not exist on disk simply lists the overlay's files in it
    }

    /**
     * One file's content: the disk file {@code base} (its first {@code baseLimit} bytes count, the rest was cut by a
     * truncate) under the blocks written since, or — once mapped — the whole content in {@code whole}.
     */
    private static final class Layer {
        private final Path base;
        private long baseLimit;
        private long size;
        private final TreeMap<Long, byte[]> blocks = new TreeMap<>();
        /** The whole file once mapped: direct, position 0 and limit its capacity, never moved. */
        private ByteBuffer whole;
        private boolean changed;
        private int handles;
        private FileChannel channel;

        Layer(Path base, long size) {
            this.base = base;
            this.baseLimit = base == null ? 0 : size;
            this.size = size;
        }

        /** The bytes of the disk file {@code path} this layer reads (see {@link MemoryOverlayIO#diskBytesKept}). */
        synchronized long diskBytesKept(Path path) {
            if (base == null || !base.equals(path)) return -1; // deleted, or another file now goes by its name
            return whole != null ? Long.MAX_VALUE : baseLimit;
        }

        synchronized FileIO handle(Path path) {
            handles++;
            return new Handle(this, path);
        }

        synchronized int read(ByteBuffer dst, long position) throws IOException {
            int n = (int) Math.max(0, Math.min(dst.remaining(), size - position));
            if (n == 0) return 0;
            if (whole != null) {
                dst.put(whole.slice((int) position, n));
                return n;
            }
            for (long p = position; p < position + n; ) {
                long block = p / BLOCK;
                int inBlock = (int) (p % BLOCK);
                int len = (int) Math.min(BLOCK - inBlock, position + n - p);
                byte[] b = blocks.get(block);
                if (b != null) dst.put(b, inBlock, len);
                else readBase(dst, p, len);
                p += len;
            }
            return n;
        }

        /** Puts {@code len} bytes of the disk file at {@code p} into {@code dst}: zeros past {@code baseLimit}. */
        private void readBase(ByteBuffer dst, long p, int len) throws IOException {
            int fromDisk = (int) Math.max(0, Math.min(len, baseLimit - p));
            if (fromDisk > 0) {
                ByteBuffer slice = dst.duplicate();
                slice.limit(slice.position() + fromDisk);
                int start = slice.position();
                while (slice.hasRemaining()) if (readAt(slice, p + slice.position() - start) < 0) break;
                dst.position(dst.position() + fromDisk);
            }
            for (int i = fromDisk; i < len; i++) dst.put((byte) 0);
        }

        synchronized void write(ByteBuffer src, long position) throws IOException {
            changed = true;
            int n = src.remaining();
            if (whole != null) {
                if (position + n > whole.capacity()) whole = grown(whole, (int) (position + n));
                whole.put((int) position, src, src.position(), n);
                src.position(src.position() + n);
            } else {
                for (long p = position; p < position + n; ) {
                    long block = p / BLOCK;
                    int inBlock = (int) (p % BLOCK);
                    int len = (int) Math.min(BLOCK - inBlock, position + n - p);
                    byte[] b = blocks.get(block);
                    if (b == null) {
                        b = new byte[BLOCK];
                        readBase(ByteBuffer.wrap(b), block * BLOCK, BLOCK);
                        blocks.put(block, b);
                    }
                    src.get(b, inBlock, len);
                    p += len;
                }
            }
            size = Math.max(size, position + n);
        }

        synchronized void truncate(long newSize) {
            if (newSize >= size) return;
            changed = true;
            size = newSize;
            baseLimit = Math.min(baseLimit, newSize);
            if (whole != null) {
                for (int i = (int) newSize; i < whole.capacity(); i++) whole.put(i, (byte) 0);
                return;
            }
            blocks.tailMap(newSize / BLOCK + 1).clear();
            byte[] last = blocks.get(newSize / BLOCK);
            if (last != null) Arrays.fill(last, (int) (newSize % BLOCK), BLOCK, (byte) 0);
        }

        /** The whole file on the heap (mapped WAL segments are written through the buffer, so it must be one array). */
        synchronized MappedRegion map(long position, int length) throws IOException {
            if (whole == null) {
                ByteBuffer all = ByteBuffer.allocateDirect((int) Math.max(size, position + length));
                read(all.duplicate().limit((int) size), 0);
                whole = all;
                blocks.clear();
                baseLimit = 0;
            } else if (position + length > whole.capacity()) {
                whole = grown(whole, (int) (position + length));
            }
            size = Math.max(size, position + length);
            ByteBuffer b = whole.slice((int) position, length);
            return new MappedRegion() {
                @Override
                public ByteBuffer buffer() {
                    return b;
                }

                @Override
                public void force(int offset, int len) {
                    // nothing goes to disk
                }
            };
        }

        /** A larger copy of {@code b} (a write or map past the end of a mapped file). */
        private static ByteBuffer grown(ByteBuffer b, int capacity) {
            ByteBuffer g = ByteBuffer.allocateDirect(capacity);
            g.put(b.duplicate().clear());
            return g.clear();
        }

        synchronized long size() {
            return size;
        }

        /** At the last close, a mapped file nobody changed goes back to reading from disk. */
        synchronized void release() throws IOException {
            if (--handles > 0) return;
            if (whole != null && !changed && base != null && sameAsDisk()) {
                whole = null;
                baseLimit = size;
            }
            if (channel != null) {
                channel.close();
                channel = null;
            }
        }

        private boolean sameAsDisk() throws IOException {
            if (Files.size(base) != size) return false;
            ByteBuffer disk = ByteBuffer.allocate(1 << 16);
            for (long p = 0; p < size; p += disk.capacity()) {
                disk.clear().limit((int) Math.min(disk.capacity(), size - p));
                while (disk.hasRemaining()) if (readAt(disk, p + disk.position()) < 0) return false;
                if (!disk.flip().equals(whole.slice((int) p, disk.limit()))) return false;
            }
            return true;
        }

        /**
         * One read of the disk file. The JDK closes a channel a thread is interrupted in: a read runs with the
         * caller's interrupt status cleared (restored after), and a channel an interrupt closed is opened again.
         */
        private int readAt(ByteBuffer dst, long position) throws IOException {
            boolean interrupted = Thread.interrupted();
            int start = dst.position(); // an interrupted read may have filled part of dst
            try {
                while (true) {
                    if (channel == null) channel = FileChannel.open(base, StandardOpenOption.READ);
                    try {
                        return channel.read(dst, position + dst.position() - start);
                    } catch (ClosedChannelException e) {
                        interrupted |= Thread.interrupted();
                        channel = null;
                    }
                }
            } finally {
                if (interrupted) Thread.currentThread().interrupt();
            }
        }
    }

    /** An open file: positional IO on its layer. */
    private static final class Handle implements FileIO {
        private final Layer layer;
        private final Path path;
        private boolean closed;

        Handle(Layer layer, Path path) {
            this.layer = layer;
            this.path = path;
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            return layer.read(dst, position);
        }

        @Override
        public void write(ByteBuffer src, long position) throws IOException {
            layer.write(src, position);
        }

        @Override
        public void force() {
            // nothing goes to disk
        }

        @Override
        public long size() {
            return layer.size();
        }

        @Override
        public void truncate(long size) {
            layer.truncate(size);
        }

        @Override
        public MappedRegion map(long position, int length) throws IOException {
            return layer.map(position, length);
        }

        @Override
        public synchronized void close() throws IOException {
            if (closed) return;
            closed = true;
            layer.release();
        }
    }
}
