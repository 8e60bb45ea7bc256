package dev.varve.config;

import java.time.Duration;
import java.util.Objects;

/**
 * The retention rule of one rank level of a {@link RankTreePolicy}: keep the last {@code n}
 * snapshots of the level, keep those younger than an age, or keep all of them.
 *
 * <p>Immutable. {@link #toString()} and {@link #parse(String)} use the syntax of the properties
 * file: {@code keepLast(100)}, {@code keepFor(PT1H)}, {@code keepAll()}.
 */
public final class Retention {

    /** The kind of a retention rule. */
    public enum Kind {
        /** Keep the last {@link Retention#count()} snapshots. */
        LAST,
        /** Keep snapshots declared less than {@link Retention#age()} ago. */
        FOR,
        /** Keep every snapshot. */
        ALL
    }

    /** The longest {@link #keepFor} age: a thousand years (kept in milliseconds, it stays far from overflowing). */
    public static final Duration MAX_AGE = Duration.ofDays(365_000);

    private static final Retention KEEP_ALL = new Retention(Kind.ALL, 0, null);

    private final Kind kind;
    private final int count;
    private final Duration age;

    private Retention(Kind kind, int count, Duration age) {
        this.kind = kind;
        this.count = count;
        this.age = age;
    }

    /**
     * Keeps the last {@code n} snapshots of the level.
     *
     * @param n how many snapshots to keep, at least 1
     * @return the rule
     * @throws IllegalArgumentException if {@code n < 1}
     */
    public static Retention keepLast(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("keepLast count must be >= 1, was " + n);
        }
        return new Retention(Kind.LAST, n, null);
    }

    /**
     * Keeps the snapshots of the level declared less than {@code age} ago.
     *
     * @param age how long to keep a snapshot, positive
     * @return the rule
     * @throws IllegalArgumentException if {@code age} is null, zero, negative or over {@link #MAX_AGE}
     */
    public static Retention keepFor(Duration age) {
        if (age == null || age.isZero() || age.isNegative()) {
            throw new IllegalArgumentException("keepFor age must be a positive duration, was " + age);
        }
        if (age.compareTo(MAX_AGE) > 0) { // ages are compared in milliseconds: a longer one would overflow at every declaration
            throw new IllegalArgumentException("keepFor age must be at most " + MAX_AGE + " (use keepAll() to keep every snapshot), was " + age);
        }
        return new Retention(Kind.FOR, 0, age);
    }

    /**
     * Keeps every snapshot of the level.
     *
     * @return the rule
     */
    public static Retention keepAll() {
        return KEEP_ALL;
    }

    /**
     * Parses the {@link #toString()} syntax: {@code keepLast(n)}, {@code keepFor(duration)} or
     * {@code keepAll()}. The duration is ISO-8601 ({@code PT1H}) or a number with a unit
     * ({@code 90s}, {@code 24h}, {@code 7d}). Names are case-insensitive; blanks are ignored.
     *
     * @param text the rule
     * @return the parsed rule
     * @throws IllegalArgumentException naming the text if it is not a valid rule
     */
    public static Retention parse(String text) {
        if (text == null) {
            throw new IllegalArgumentException("retention rule must not be null");
        }
        String t = text.strip();
        int open = t.indexOf('(');
        if (open < 0 || !t.endsWith(")")) {
            throw bad(text, null);
        }
        String name = t.substring(0, open).strip();
        String arg = t.substring(open + 1, t.length() - 1).strip();
        try {
            if (name.equalsIgnoreCase("keepAll") && arg.isEmpty()) {
                return keepAll();
            } else if (name.equalsIgnoreCase("keepLast")) {
                return keepLast(Integer.parseInt(arg));
            } else if (name.equalsIgnoreCase("keepFor")) {
                return keepFor(ConfigProperties.parseDuration(arg));
            }
        } catch (IllegalArgumentException e) { // includes NumberFormatException
            throw bad(text, e);
        }
        throw bad(text, null);
    }

    private static IllegalArgumentException bad(String text, Exception cause) {
        String msg = "invalid retention rule '" + text + "', expected keepLast(n >= 1), keepFor(positive duration) or keepAll()";
        return new IllegalArgumentException(cause == null ? msg : msg + ": " + cause.getMessage(), cause);
    }

    /**
     * Returns the kind of this rule.
     *
     * @return the kind
     */
    public Kind kind() {
        return kind;
    }

    /**
     * Returns how many snapshots a {@link Kind#LAST} rule keeps.
     *
     * @return the count, at least 1
     * @throws IllegalStateException if this is not a {@link Kind#LAST} rule
     */
    public int count() {
        if (kind != Kind.LAST) {
            throw new IllegalStateException("count() of " + this);
        }
        return count;
    }

    /**
     * Returns how long a {@link Kind#FOR} rule keeps a snapshot.
     *
     * @return the age, positive
     * @throws IllegalStateException if this is not a {@link Kind#FOR} rule
     */
    public Duration age() {
        if (kind != Kind.FOR) {
            throw new IllegalStateException("age() of " + this);
        }
        return age;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Retention r && kind == r.kind && count == r.count && Objects.equals(age, r.age);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, count, age);
    }

    @Override
    public String toString() {
        switch (kind) {
            case LAST:
                return "keepLast(" + count + ")";
            case FOR:
                return "keepFor(" + age + ")";
            default:
                return "keepAll()";
        }
    }
}
