package dev.varve.core.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/** The real file system through {@link FileChannel}. */
final class ChannelFileIOFactory implements FileIOFactory {
    static final ChannelFileIOFactory INSTANCE = new ChannelFileIOFactory();
    /**
     * {@code com.sun.nio.file.ExtendedOpenOption.DIRECT} (module jdk.unsupported), looked up by name: javac flags
     * the type as internal API on newer JDKs, which the build turns into an error. Null where it is missing.
     */
    private static final OpenOption DIRECT = directOption();

    private ChannelFileIOFactory() {
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        FileChannel ch = create
                ? FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.CREATE)
                : FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
        return new ChannelFileIO(file, ch);
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
            return Optional.of(new ChannelFileIO(file, FileChannel.open(file, StandardOpenOption.WRITE, DIRECT)));
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

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        Files.move(from, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
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
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException | UnsupportedOperationException e) {
            // some platforms cannot open directories; the rename itself is still atomic there
            if (!System.getProperty("os.name", "").toLowerCase().contains("win") && e instanceof IOException) throw (IOException) e;
        }
    }

    private static final class ChannelFileIO implements FileIO {
        private final Path path;
        private final FileChannel channel;

        ChannelFileIO(Path path, FileChannel channel) {
            this.path = path;
            this.channel = channel;
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            int total = 0;
            while (dst.hasRemaining()) {
                int n = channel.read(dst, position + total);
                if (n < 0) break;
                total += n;
            }
            return total;
        }

        @Override
        public void write(ByteBuffer src, long position) throws IOException {
            long p = position;
            while (src.hasRemaining()) p += channel.write(src, p);
        }

        @Override
        public void force() throws IOException {
            channel.force(true);
        }

        @Override
        public void forceData() throws IOException {
            channel.force(false);
        }

        @Override
        public long size() throws IOException {
            return channel.size();
        }

        @Override
        public void truncate(long size) throws IOException {
            channel.truncate(size);
        }

        @Override
        public MappedRegion map(long position, int length) throws IOException {
            MappedByteBuffer mb = channel.map(FileChannel.MapMode.READ_WRITE, position, length);
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
            channel.close();
        }
    }
}
