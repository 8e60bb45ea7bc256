package dev.varve.core.page;

/**
 * How the B+tree and table code reach pages. Page memory implements it for the current state; the snapshot layer
 * implements a read-only one over past page versions, so the same tree code runs as of a snapshot.
 *
 * <p>Every acquire pins the page (it is not evicted) and takes its latch; the matching release drops both. Callers
 * hold pages for one step of a tree operation and never across user code.
 */
public interface PageAccess {
    /** Page size in bytes. */
    int pageSize();

    /** The page, pinned and read-latched. Its contents are checked (CRC) if it had to be read from disk. */
    Page acquireRead(long pageId);

    /**
     * {@link #acquireRead} of child {@code childId}, whose id the caller read at child index {@code index} of inner page
     * {@code parent} (which it may have released since; a tree's root is child 0 of its meta page): page memory finds
     * the child through what the parent's frame remembers of where its children were, instead of its page table. The
     * result is the same.
     */
    default Page acquireReadChild(Page parent, int index, long childId) {
        return acquireRead(childId);
    }

    /**
     * {@link #acquireRead} of {@code pageId}, where {@code last} is what the caller's previous acquire of the same id
     * returned (released since), or null: page memory tries the frame that held the page then before its page table,
     * for a page read again and again, such as a tree's meta page. The result is the same.
     */
    default Page acquireReadAgain(Page last, long pageId) {
        return acquireRead(pageId);
    }

    /**
     * Starts an optimistic read of child {@code childId} of {@code parent} (found as {@link #acquireReadChild} finds
     * it), for a caller that reads pages no writer can change meanwhile and wants no pin: a stamp naming the page, or
     * -1 when the source cannot tell where the page is without acquiring it (the caller acquires it then). The page is
     * {@link #stamped}; what the caller reads from it is the page's only if {@link #validate} says so afterwards:
     * before that it may be another page's bytes, so the caller's reads may throw or find nonsense, which it drops
     * (it reads the page acquired then). Sources that do not read this way return -1.
     */
    default long peekChild(Page parent, int index, long childId) {
        return -1;
    }

    /** {@link #peekChild} of {@code pageId} in {@code last}, the page a previous acquire of it returned, as {@link #acquireReadAgain} tries it. */
    default long peekAgain(Page last, long pageId) {
        return -1;
    }

    /** The page a stamp of {@link #peekChild} or {@link #peekAgain} names, not pinned. */
    default Page stamped(long stamp) {
        throw new IllegalArgumentException("not a stamp of this source: " + stamp);
    }

    /** Whether the page {@code stamp} names held its page from the stamp until now: what was read from it stands. */
    default boolean validate(long stamp) {
        return false;
    }

    /**
     * {@link #stamped} for a stamp {@link #peekChild} gave for child {@code index} of {@code parent}: the same page, found
     * where the source can through the parent's hint, whose lines the peek has just read, rather than through the
     * stamp's slot (a frame array over the whole region, whose line a get over many pages finds cold).
     */
    default Page stampedChild(Page parent, int index, long stamp) {
        return stamped(stamp);
    }

    /** {@link #validate} of {@code stamp}, given the page {@link #stamped} or {@link #stampedChild} returned for it. */
    default boolean validate(Page page, long stamp) {
        return validate(stamp);
    }

    /** Releases a page taken by {@link #acquireRead}, {@link #acquireReadChild} or {@link #acquireReadAgain}. */
    void releaseRead(Page page);

    /**
     * The page, pinned, write-latched and marked dirty: the caller is about to change it. Throws
     * {@link UnsupportedOperationException} on a read-only source.
     */
    Page acquireWrite(long pageId);

    /**
     * A page whose previous contents do not matter (a page just allocated at the end of a file, or taken off the free
     * list): pinned, write-latched, dirty, zeroed except for its page id in the header. No disk read happens.
     */
    Page acquireNew(long pageId);

    /** {@link #acquireWrite} of a child, found as {@link #acquireReadChild} finds it. */
    default Page acquireWriteChild(Page parent, int index, long childId) {
        return acquireWrite(childId);
    }

    /** Releases a page taken by {@link #acquireWrite}, {@link #acquireWriteChild} or {@link #acquireNew}. */
    void releaseWrite(Page page);

    /** A source that only reads (past versions, salvage): every write throws {@link UnsupportedOperationException}. */
    interface ReadOnly extends PageAccess {
        /** Why this source refuses writes, for the exception's message. */
        String readOnlyReason();

        @Override
        default Page acquireWrite(long pageId) {
            throw new UnsupportedOperationException(readOnlyReason());
        }

        @Override
        default Page acquireNew(long pageId) {
            throw new UnsupportedOperationException(readOnlyReason());
        }

        @Override
        default void releaseWrite(Page page) {
            throw new UnsupportedOperationException(readOnlyReason());
        }
    }
}
