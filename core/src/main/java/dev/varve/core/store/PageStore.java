package dev.varve.core.store;

import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageId;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The page files of a store: one per partition (file id), named {@code t<table>-p<partition>.page} in the
 * {@code pages} directory, opened lazily. Page images handed to {@link #write} carry their CRC already
 * ({@link PageChecksum#stamp}); {@link #read} checks it.
 */
public final class PageStore implements AutoCloseable {
    private static final String PREFIX = "t";
    private static final String SUFFIX = ".page";

    private final FileIOFactory io;
    private final Path dir;
    private final int pageSize;
    private final Map<Integer, PartitionFile> files = new ConcurrentHashMap<>();
    /** The store id files are created and stamped with; 0 until it is durable in a checkpoint marker. */
    private volatile long storeId;
    private volatile boolean closed;

    /** A store over {@code dir} for reading (its store id not known); nothing on disk changes until {@link #tidy} or a write. */
    public PageStore(FileIOFactory io, Path dir, int pageSize) {
        this(io, dir, pageSize, 0);
    }

    /**
     * A store over {@code dir} whose files carry {@code storeId} (0 when it is not yet durable in a checkpoint marker:
     * files created meanwhile name no store, and no generation is stamped; see {@link #storeIdDurable}).
     */
    public PageStore(FileIOFactory io, Path dir, int pageSize, long storeId) {
        this.io = io;
        this.dir = dir;
        this.pageSize = pageSize;
        this.storeId = storeId;
    }

    /** The store id is durable in a checkpoint marker from now on: files created or stamped after carry it. */
    public void storeIdDurable(long id) {
        if (id == 0) throw new IllegalArgumentException("store id 0 names no store");
        storeId = id;
    }

    /** The store id new files carry, 0 when not yet durable. */
    public long storeId() {
        return storeId;
    }

    /** What the header of {@code fileId}'s page file (which must exist) says of its store and generation. */
    public PageFileStamp stamp(int fileId) {
        return file(fileId, false).stamp();
    }

    /**
     * Records in {@code fileId}'s header that checkpoint {@code checkpointId}'s page writes reached it; call before
     * the file's fsync. Returns false, writing nothing, while the store id is not durable.
     */
    public boolean stampGeneration(int fileId, long checkpointId) {
        long id = storeId;
        if (id == 0) return false;
        file(fileId, true).stampGeneration(checkpointId, id);
        return true;
    }

    /**
     * Creates the directory if missing and deletes what page-file creations cut short by a crash left: open calls it
     * once it has decided the store is sound, before the first page is read or written.
     */
    public void tidy() {
        try {
            io.createDirectories(dir);
            for (Path p : io.list(dir, PREFIX)) if (DurableFiles.isTemp(p)) io.delete(p);
        } catch (IOException e) {
            throw new StorageException("cannot create or list the page directory", dir, e);
        }
    }

    /** Page size in bytes. */
    public int pageSize() {
        return pageSize;
    }

    /** The path of a file id's page file. */
    public Path pathOf(int fileId) {
        return dir.resolve(nameOf(fileId));
    }

    private static String nameOf(int fileId) {
        return String.format("%s%05d-p%05d%s", PREFIX, PageId.tableOf(fileId), PageId.partitionOf(fileId), SUFFIX);
    }

    /**
     * True when {@code name} is one the page store gives a page file: a file beside them under another name (an
     * operator's copy, "t00001-p00000 copy.page") is not the store's, and no check of the store's files reads it.
     */
    public static boolean isPageFileName(String name) {
        int id = fileIdOf(name);
        return id >= 0 && nameOf(id).equals(name);
    }

    /**
     * The open page file of {@code fileId}; a missing one is created for a write, and is damage for a read (a page is
     * read only from a file some write created).
     */
    private PartitionFile file(int fileId, boolean write) {
        if (closed) throw new IllegalStateException("page store " + dir + " is closed");
        PartitionFile open = files.get(fileId); // every page read and write comes here: no lock once the file is open
        return open != null ? open : files.computeIfAbsent(fileId, id -> PartitionFile.open(io, pathOf(id), id, pageSize, write, storeId));
    }

    /** Reads and checks a page into {@code dst} at {@code offset}. */
    public void read(long pageId, ByteBuffer dst, int offset) {
        file(PageId.fileId(pageId), false).read(PageId.index(pageId), dst, offset);
    }

    /**
     * Reads up to {@code count} consecutive pages of one file, {@code firstPageId} and the pages after it, into
     * {@code dst} at {@code offset} in one call, without checking them (see {@link #intact}); returns how many whole
     * pages the file held.
     */
    public int readUnchecked(long firstPageId, int count, ByteBuffer dst, int offset) {
        return file(PageId.fileId(firstPageId), false).readUnchecked(PageId.index(firstPageId), count, dst, offset);
    }

    /** True when the page image at {@code offset} of {@code buf} passes its CRC and carries {@code pageId}. */
    public boolean intact(long pageId, ByteBuffer buf, int offset) {
        return PageChecksum.stored(buf, offset) == PageChecksum.compute(buf, offset, pageSize) && PageChecksum.storedPageId(buf, offset) == pageId;
    }

    /** Writes a stamped page image. */
    public void write(long pageId, ByteBuffer src, int offset) {
        write(pageId, src, offset, 1);
    }

    /** Writes {@code pages} stamped page images of one file, {@code firstPageId} and the pages after it, in one call. */
    public void write(long firstPageId, ByteBuffer src, int offset, int pages) {
        file(PageId.fileId(firstPageId), true).write(PageId.index(firstPageId), src, offset, pages);
    }

    /** The path of a file id's page file, which is created (durably, with its header) when missing. */
    public Path create(int fileId) {
        return file(fileId, true).path();
    }

    /**
     * Throws the failure of {@code fileId}'s page file if an IO error stopped it: a write can then be refused before
     * its record reaches the WAL (it could not be applied, and would only come back at the next open).
     */
    public void checkUsable(int fileId) {
        if (closed) throw new IllegalStateException("page store is closed");
        PartitionFile open = files.get(fileId); // a file not open yet has not failed
        if (open != null) open.checkUsable();
    }

    /**
     * Closes the page file of {@code fileId} if it is open (a later call opens it again): for a caller that is done
     * with a file and would otherwise hold one open descriptor per file of the store. The caller makes sure no other
     * thread uses the file meanwhile.
     */
    public void release(int fileId) {
        PartitionFile open = files.remove(fileId);
        if (open != null) open.close();
    }

    /** fsync of one page file. */
    public void force(int fileId) {
        file(fileId, true).force();
    }

    /** Byte offset of a page in its file, for messages. */
    public long offsetOf(long pageId) {
        return (Integer.toUnsignedLong(PageId.index(pageId)) + 1) * pageSize;
    }

    /** True when the page file of {@code fileId} exists on disk. */
    public boolean exists(int fileId) {
        return files.containsKey(fileId) || io.exists(pathOf(fileId));
    }

    /** Pages present on disk in a file. */
    public long pageCount(int fileId) {
        return exists(fileId) ? file(fileId, false).pageCount() : 0;
    }

    /** The length in bytes of a file on disk (0 when there is none): header page, pages, and a page cut short at its end. */
    public long bytesOf(int fileId) {
        return exists(fileId) ? file(fileId, false).bytes() : 0;
    }

    /** File ids of every page file on disk. */
    public List<Integer> fileIds() {
        List<Integer> out = new ArrayList<>();
        try {
            if (!io.exists(dir)) return out; // a store that never wrote a page, before open's tidy
            for (Path p : io.list(dir, PREFIX)) {
                String n = p.getFileName().toString();
                // only the names pathOf gives: an operator's copy beside a page file ("t00001-p00000 copy.page") is
                // not the store's, and open, which lists the page files to check their generations, must not refuse it
                if (isPageFileName(n)) out.add(fileIdOf(n));
            }
        } catch (IOException | RuntimeException e) {
            throw new StorageException("cannot list page files: " + e.getMessage(), dir, e);
        }
        return out;
    }

    /** The file id a page file name gives, -1 when the name is not one pathOf gives. */
    private static int fileIdOf(String name) {
        if (!name.endsWith(SUFFIX)) return -1;
        int dash = name.indexOf("-p");
        if (dash < 2) return -1;
        String table = name.substring(1, dash);
        String partition = name.substring(dash + 2, name.length() - SUFFIX.length());
        if (!table.chars().allMatch(Character::isDigit) || !partition.chars().allMatch(Character::isDigit) || table.length() > 9 || partition.length() > 9)
            return -1;
        try {
            return PageId.fileId(Integer.parseInt(table), Integer.parseInt(partition));
        } catch (RuntimeException e) { // numbers no file id holds
            return -1;
        }
    }

    @Override
    public void close() {
        closed = true;
        StorageException first = null;
        for (PartitionFile f : files.values()) {
            try {
                f.close();
            } catch (StorageException e) {
                if (first == null) first = e;
            }
        }
        files.clear();
        if (first != null) throw first;
    }
}
