package dev.varve.core.io;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * A {@link FileIOFactory} that forwards every call to the real file system, or to another factory: a test wrapper
 * extends it and overrides only the calls it watches or breaks.
 */
public abstract class ForwardingFileIOFactory implements FileIOFactory {
    /** The file system every call goes to. */
    protected final FileIOFactory delegate;

    /** For a wrapper: everything goes to the real file system until the wrapper overrides it. */
    protected ForwardingFileIOFactory() {
        this(FileIOFactory.standard());
    }

    /** For a wrapper of another factory ({@link UnforcedFileIOFactory}, say). */
    protected ForwardingFileIOFactory(FileIOFactory delegate) {
        this.delegate = delegate;
    }

    @Override
    public FileIO open(Path file, boolean create) throws IOException {
        return delegate.open(file, create);
    }

    @Override
    public boolean exists(Path file) {
        return delegate.exists(file);
    }

    @Override
    public void delete(Path file) throws IOException {
        delegate.delete(file);
    }

    @Override
    public void forceDirectory(Path dir) throws IOException {
        delegate.forceDirectory(dir);
    }

    @Override
    public void atomicMove(Path from, Path to) throws IOException {
        delegate.atomicMove(from, to);
    }

    @Override
    public List<Path> list(Path dir, String prefix) throws IOException {
        return delegate.list(dir, prefix);
    }

    @Override
    public void createDirectories(Path dir) throws IOException {
        delegate.createDirectories(dir);
    }
}
