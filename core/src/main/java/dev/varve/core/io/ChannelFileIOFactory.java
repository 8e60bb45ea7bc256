package dev.varve.core.io;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/** The real file system through {@link FileChannel}. */
final class ChannelFileIOFactory implements FileIOFactory {
    static final ChannelFileIOFactory INSTANCE = new ChannelFileIOFactory(FsyncWitness::open);
    /**
     * {@code com.sun.nio.file.ExtendedOpenOption.DIRECT} (module jdk.unsupported), looked up by name: javac flags
     * the type as internal API on newer JDKs, which the build turns into an error. Null where it is missing.
     */
    private static final OpenOption DIRECT = directOption();

    /** Opens each file's {@link FsyncWitness} before its first fsync. */
    private final FsyncWitness.Opener witnesses;

    /** The real file system; {@code witnesses} is {@link FsyncWitness#open} but in tests of the witness. */
    ChannelFileIOFactory(FsyncWitness.Opener witnesses) {
        this.witnesses = witnesses;
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        return create ? ChannelFileIO.open(file, witnesses, StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.CREATE)
                : ChannelFileIO.open(file, witnesses, StandardOpenOption.READ, StandardOpenOption.WRITE);
    }

    @Override
    public boolean mapsSealedFiles() {
        return SealedMapping.AVAILABLE;
    }

    private static OpenOption directOption() {
        try {
            return (OpenOption) Class.forName("com.sun.nio.file.ExtendedOpenOption").getField("DIRECT").get(null);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return null;
        }
    }

    @Override
    public Optional<FileIO> openUncached(Path file, int alignment) throws IOException {
        long block;
        try {
            block = Files.getFileStore(file).getBlockSize();
        } catch (UnsupportedOperationException e) {
            return Optional.empty();
        }
        if (block <= 0 || alignment % block != 0) return Optional.empty();
        try {
            if (DIRECT == null) return Optional.empty();
            return Optional.of(ChannelFileIO.open(file, witnesses, StandardOpenOption.WRITE, DIRECT));
        } catch (UnsupportedOperationException e) {
            return Optional.empty();
        } catch (IOException e) {
            if (!Files.exists(file)) throw e;
            return Optional.empty(); // the file system refuses O_DIRECT (tmpfs: EINVAL)
        }
    }

    @Override
    public boolean exists(Path file) {
        return Files.exists(file);
    }

    @Override
    public void delete(Path file) throws IOException {
        Files.deleteIfExists(file);
    }

    /**
     * The files open through this factory, by absolute path: a channel closed by an interrupt is reopened by path, so a
     * file renamed while open (a WAL segment is written under its temporary name, then named) must be reopened under
     * its new name, not the one it was opened with. Guarded by itself; a reopen and a rename of the same file hold it.
     */
    private static final Map<Path, List<ChannelFileIO>> OPEN = new HashMap<>();

    private static Path key(Path p) {
        return p.toAbsolutePath().normalize();
    }

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        synchronized (OPEN) {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            List<ChannelFileIO> moved = OPEN.remove(key(from));
            if (moved != null) {
                for (ChannelFileIO f : moved) f.path = to;
                OPEN.computeIfAbsent(key(to), k -> new ArrayList<>()).addAll(moved);
            }
        }
        syncDirectory(to.toAbsolutePath().getParent());
    }

    @Override
    public List<Path> list(Path dir, String prefix) throws IOException {
        List<Path> out = new ArrayList<>();
        if (!Files.isDirectory(dir)) return out;
        try (Stream<Path> s = Files.list(dir)) {
            s.filter(p -> p.getFileName().toString().startsWith(prefix)).sorted().forEach(out::add);
        }
        return out;
    }

    @Override
    public void createDirectories(Path dir) throws IOException {
        if (Files.isDirectory(dir)) return;
        Files.createDirectories(dir);
        syncDirectory(dir.toAbsolutePath().getParent());
    }

    /** fsync of a directory makes created, renamed and deleted entries durable (Linux; a no-op where unsupported). */
    static void syncDirectory(Path dir) throws IOException {
        if (dir == null) return;
        // as for a file's channel: an interrupt of the caller (set before or arriving during the fsync) would close
        // this channel and fail the rename it makes durable; run with the status cleared, again if one arrives, and
        // restore it after
        boolean interrupted = Thread.interrupted();
        try {
            while (true) {
                try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
                    ch.force(true);
                    return;
                } catch (ClosedByInterruptException e) {
                    interrupted = true;
                    Thread.interrupted();
                } catch (IOException | UnsupportedOperationException e) {
                    // some platforms cannot open directories; the rename itself is still atomic there
                    if (!System.getProperty("os.name", "").toLowerCase().contains("win") && e instanceof IOException) throw (IOException) e;
                    return;
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    /**
     * A file through a {@link FileChannel} that an interrupt does not break. The JDK closes a channel when a thread
     * blocked in it is interrupted (and fails every other thread's call with it) — a {@code Future.cancel(true)} of
     * one reader would poison the store for all. So a call runs with the caller's interrupt status cleared (restored
     * after), and a call that finds the channel closed by someone else's interrupt reopens it and runs again: a read,
     * write or truncate at a given position does the same the second time. A force is not simply run again: see
     * {@link #force(boolean)}.
     */
    private static final class ChannelFileIO implements FileIO {
        /** Where the file is now: moved by {@link #atomicMove} under {@link #OPEN}. */
        private volatile Path path;
        private final OpenOption[] options;
        private final FsyncWitness.Opener witnesses;
        private volatile FileChannel channel;
        private volatile boolean closed;
        private volatile FsyncWitness witness; // set under this; opened before the first force, so it sees every error a force may
        /** The sealed bytes mapped ({@link #readMapped}); set under this, let go of by a cut and at close. */
        private volatile SealedMapping mapping;

        private ChannelFileIO(Path path, OpenOption[] options, FsyncWitness.Opener witnesses, FileChannel channel) {
            this.path = path;
            this.options = options;
            this.witnesses = witnesses;
            this.channel = channel;
        }

        static ChannelFileIO open(Path path, FsyncWitness.Opener witnesses, OpenOption... options) throws IOException {
            ChannelFileIO f = new ChannelFileIO(path, options, witnesses, FileChannel.open(path, options));
            synchronized (OPEN) {
                OPEN.computeIfAbsent(key(path), k -> new ArrayList<>()).add(f);
            }
            return f;
        }

        /** One call on the channel. */
        private interface Call<T> {
            T on(FileChannel ch) throws IOException;
        }

        private <T> T call(Call<T> call) throws IOException {
            boolean interrupted = Thread.interrupted();
            try {
                while (true) {
                    FileChannel ch = channel;
                    try {
                        return call.on(ch);
                    } catch (ClosedChannelException e) { // ClosedByInterrupt- and AsynchronousCloseException too
                        if (closed) throw e;
                        interrupted |= Thread.interrupted();
                        reopen(ch);
                    }
                }
            } finally {
                if (interrupted) Thread.currentThread().interrupt();
            }
        }

        /** Replaces {@code broken} (closed by an interrupt) with a new channel, unless another caller already did. */
        private void reopen(FileChannel broken) throws IOException {
            synchronized (OPEN) { // not while the file is being renamed: path is where it is
                synchronized (this) {
                    if (closed) throw new ClosedChannelException();
                    if (channel == broken) channel = FileChannel.open(path, options);
                }
            }
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            int start = dst.position(); // an interrupted read may have filled part of dst: the next goes on from there
            while (dst.hasRemaining()) {
                long at = position + dst.position() - start;
                if (call(ch -> ch.read(dst, at)) < 0) break;
            }
            return dst.position() - start;
        }

        @Override
        public void write(ByteBuffer src, long position) throws IOException {
            int start = src.position();
            while (src.hasRemaining()) {
                long at = position + src.position() - start;
                call(ch -> ch.write(src, at));
            }
        }

        @Override
        public void force() throws IOException {
            force(true);
        }

        @Override
        public void forceData() throws IOException {
            force(false);
        }

        /**
         * An fsync (fdatasync without {@code metadata}) through the channel. If the channel was closed under it, the
         * fsync may have failed and had its error replaced by the close, and the kernel reports that error to no other
         * descriptor opened since: so the channel is reopened for later calls and the fsync taken again through the
         * {@link FsyncWitness}, which reports it. Success there means the pages are on the disk.
         */
        private void force(boolean metadata) throws IOException {
            FsyncWitness w = witness; // every force after the first finds it set, without the monitor
            if (w == null) w = witness();
            boolean interrupted = Thread.interrupted();
            try {
                FileChannel ch = channel;
                try {
                    ch.force(metadata);
                } catch (ClosedChannelException e) { // ClosedByInterrupt- and AsynchronousCloseException too
                    if (closed) throw e;
                    interrupted |= Thread.interrupted();
                    reopen(ch);
                    if (w == null) throw e; // the file left its directory before its first fsync: nothing to retake it with
                    try {
                        w.sync();
                    } catch (IOException failed) {
                        throw new IOException("fsync failed (taken again through a second descriptor after an interrupt closed "
                                + "the channel during one): " + failed.getMessage(), failed);
                    }
                }
            } finally {
                if (interrupted) Thread.currentThread().interrupt();
            }
        }

        /**
         * The witness, opened on the first force (before its fsync: it must see that fsync's error); null when the
         * file was deleted before that, so no name leads to it any more (an fsync through the channel still runs).
         */
        private synchronized FsyncWitness witness() throws IOException {
            if (closed) throw new ClosedChannelException(); // a witness opened after close would stay open
            if (witness == null) {
                try {
                    witness = witnesses.open(path);
                } catch (FileNotFoundException | NoSuchFileException gone) {
                    return null;
                }
            }
            return witness;
        }

        @Override
        public boolean readMapped(ByteBuffer dst, long position, long sealed) throws IOException {
            if (!SealedMapping.AVAILABLE) return false;
            SealedMapping m = mapping;
            if (m == null && (m = mapSealed(sealed)) == null) return false;
            return position + dst.remaining() <= sealed && m.copy(dst, position);
        }

        /**
         * The mapping, made now of the first {@code sealed} bytes if there is none; null for a file shorter than that
         * (damaged: its reads report it) or too long for one buffer. A file cut under its mapping faults a read of the
         * bytes cut, which {@link SealedMapping#copy} reports as an {@link IOException}; only recovery cuts a filled
         * archive segment, at open, before anything reads it.
         */
        private synchronized SealedMapping mapSealed(long sealed) throws IOException {
            if (closed) throw new ClosedChannelException();
            if (mapping != null || sealed > Integer.MAX_VALUE || size() < sealed) return mapping;
            return mapping = call(ch -> SealedMapping.map(ch, sealed));
        }

        @Override
        public long size() throws IOException {
            return call(FileChannel::size);
        }

        @Override
        public void truncate(long size) throws IOException {
            synchronized (this) { // bytes past the cut must not be read through a mapping (they fault), nor change under it
                SealedMapping m = mapping;
                if (m != null && m.length() > size) {
                    mapping = null;
                    m.close();
                }
            }
            call(ch -> ch.truncate(size));
        }

        @Override
        public MappedRegion map(long position, int length) throws IOException {
            MappedByteBuffer mb = call(ch -> ch.map(FileChannel.MapMode.READ_WRITE, position, length)); // outlives the channel
            return new MappedRegion() {
                @Override
                public ByteBuffer buffer() {
                    return mb;
                }

                @Override
                public void force(int offset, int len) {
                    mb.force(offset, len);
                }
            };
        }

        @Override
        public void close() throws IOException {
            synchronized (this) {
                closed = true;
                try {
                    channel.close();
                } finally {
                    try {
                        if (witness != null) witness.close();
                    } finally {
                        if (mapping != null) mapping.close();
                    }
                }
            }
            synchronized (OPEN) {
                List<ChannelFileIO> open = OPEN.get(key(path));
                if (open != null) {
                    open.removeIf(f -> f == this);
                    if (open.isEmpty()) OPEN.remove(key(path));
                }
            }
        }
    }
}
