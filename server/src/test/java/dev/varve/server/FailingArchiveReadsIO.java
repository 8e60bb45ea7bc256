package dev.varve.server;

import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.MappedRegion;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

/** The real file system, whose reads of the archive's Pagelog segments fail once {@link #failing} is set, as a failing disk's would. */
final class FailingArchiveReadsIO implements FileIOFactory {
    final AtomicBoolean failing = new AtomicBoolean();
    private final FileIOFactory fs = FileIOFactory.standard();

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        FileIO f = fs.open(file, create);
        return file.getFileName().toString().startsWith("pagelog-") ? new Failing(f) : f;
    }

    @Override
    public boolean exists(Path file) {
        return fs.exists(file);
    }

    @Override
    public void delete(Path file) throws IOException {
        fs.delete(file);
    }

    @Override
    public void forceDirectory(Path dir) throws IOException {
        fs.forceDirectory(dir);
    }

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        fs.atomicMove(from, to);
    }

    @Override
    public List<Path> list(Path dir, String prefix) throws IOException {
        return fs.list(dir, prefix);
    }

    @Override
    public void createDirectories(Path dir) throws IOException {
        fs.createDirectories(dir);
    }

    private final class Failing implements FileIO {
        private final FileIO f;

        Failing(FileIO f) {
            this.f = f;
        }

        @Override
        public Path path() {
            return f.path();
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            if (failing.get()) throw new IOException("Input/output error");
            return f.read(dst, position);
        }

        @Override
        public void write(ByteBuffer src, long position) throws IOException {
            f.write(src, position);
        }

        @Override
        public void force() throws IOException {
            f.force();
        }

        @Override
        public void forceData() throws IOException {
            f.forceData();
        }

        @Override
        public long size() throws IOException {
            return f.size();
        }

        @Override
        public void truncate(long size) throws IOException {
            f.truncate(size);
        }

        @Override
        public MappedRegion map(long position, int length) throws IOException {
            return f.map(position, length);
        }

        @Override
        public void close() throws IOException {
            f.close();
        }
    }
}
