package dev.varve.core.spi;

import java.nio.ByteBuffer;

/**
 * The value the current thread is writing into its pages, as bytes of the WAL record that already logged it: the
 * engine says which record and where in it before it applies each operation; {@code WAL_PHYSICAL}'s page log then
 * names those bytes in that record instead of logging them a second time (a {@code PAGE_REBUILD}'s "logged" op).
 *
 * <p>One per thread, reused: setting it allocates nothing.
 */
public final class LoggedValue {
    private static final ThreadLocal<LoggedValue> CURRENT = ThreadLocal.withInitial(LoggedValue::new);

    private long lsn = -1;
    private ByteBuffer payload;
    private int offset;
    private int length;

    private LoggedValue() {
    }

    /** This thread's value; {@link #active()} says whether it names one. */
    public static LoggedValue current() {
        return CURRENT.get();
    }

    /**
     * From now on this thread applies the record at {@code lsn} whose payload is {@code payload} (its bytes from
     * index 0 are the record's payload, and stay unchanged until {@link #clear()}); no value yet.
     */
    public static void record(long lsn, ByteBuffer payload) {
        LoggedValue v = CURRENT.get();
        v.lsn = lsn;
        v.payload = payload;
        v.length = 0;
    }

    /** The operation being applied writes the value at {@code [offset, offset + length)} of the record's payload. */
    public static void value(int offset, int length) {
        LoggedValue v = CURRENT.get();
        v.offset = offset;
        v.length = length;
    }

    /** The thread applies no logged record any more. */
    public static void clear() {
        LoggedValue v = CURRENT.get();
        v.lsn = -1;
        v.payload = null;
        v.length = 0;
    }

    /** True when a value is named. */
    public boolean active() {
        return lsn >= 0 && length > 0;
    }

    public long lsn() {
        return lsn;
    }

    public ByteBuffer payload() {
        return payload;
    }

    public int offset() {
        return offset;
    }

    public int length() {
        return length;
    }
}
