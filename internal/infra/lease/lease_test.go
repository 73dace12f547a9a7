package lease

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestASecondHolderIsRefusedAndToldTheOwner(t *testing.T) {
	dir := t.TempDir()
	first, err := Acquire(dir, 4242)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()

	t.Run("before the owner announces its URL, the refusal names its PID", func(t *testing.T) {
		_, err := Acquire(dir, 1)
		var held *HeldError
		if !errors.As(err, &held) || held.Owner.PID != 4242 || held.Owner.URL != "" || !strings.Contains(err.Error(), "PID 4242, still starting") {
			t.Fatalf("second Acquire: %v", err)
		}
	})
	if err := first.Announce(Owner{PID: 4242, URL: "http://127.0.0.1:4096/", Username: "tandem", Password: "pw"}); err != nil {
		t.Fatal(err)
	}
	t.Run("once announced, the refusal names its PID and URL and carries its credentials", func(t *testing.T) {
		_, err := Acquire(dir, 1)
		var held *HeldError
		if !errors.As(err, &held) || held.Store != dir || held.Owner.Password != "pw" ||
			!strings.Contains(err.Error(), "in use by tandem (PID 4242, http://127.0.0.1:4096/)") {
			t.Fatalf("second Acquire: %v", err)
		}
	})
	t.Run("the record is readable by the user alone", func(t *testing.T) {
		fi, err := os.Stat(dir + "/" + FileName)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("lease file: %v %v", fi.Mode(), err)
		}
	})
	t.Run("released, the lease goes to the next one and the old record is gone", func(t *testing.T) {
		if err := first.Release(); err != nil {
			t.Fatal(err)
		}
		if err := first.Release(); err != nil {
			t.Fatalf("a second Release: %v", err)
		}
		if o := ReadOwner(dir); o.PID != 0 {
			t.Fatalf("the released lease still names %+v", o)
		}
		next, err := Acquire(dir, 7)
		if err != nil {
			t.Fatal(err)
		}
		defer next.Release()
		if o := ReadOwner(dir); o.PID != 7 || o.URL != "" {
			t.Fatalf("the new holder's record: %+v", o)
		}
	})
}

func TestOfManyRacingAcquiresExactlyOneWins(t *testing.T) {
	dir := t.TempDir()
	const n = 20
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []*File
		refused int
	)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			l, err := Acquire(dir, 1000+i)
			mu.Lock()
			defer mu.Unlock()
			var held *HeldError
			switch {
			case err == nil:
				winners = append(winners, l)
			case errors.As(err, &held):
				refused++
			default:
				t.Errorf("Acquire: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, l := range winners {
		defer l.Release()
	}
	if len(winners) != 1 || refused != n-1 {
		t.Fatalf("%d holders and %d refused, want 1 and %d", len(winners), refused, n-1)
	}
}

const childEnv = "LEASE_TEST_CHILD_DIR"

// TestHelperHolder is not a test: it is the body of the child process that holds a lease until it
// is killed.
func TestHelperHolder(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		t.Skip("helper process; runs only when started by a test")
	}
	l, err := Acquire(dir, os.Getpid())
	if err != nil {
		os.Stdout.WriteString("ERROR " + err.Error() + "\n")
		os.Exit(2)
	}
	if err := l.Announce(Owner{PID: os.Getpid(), URL: "http://127.0.0.1:1/"}); err != nil {
		os.Exit(2)
	}
	os.Stdout.WriteString("HELD\n")
	select {} // until killed
}

func TestAnotherProcessHoldsTheLeaseUntilItDies(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHolder$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "HELD") || strings.HasPrefix(sc.Text(), "ERROR") {
				lines <- sc.Text()
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	select {
	case line := <-lines:
		if line != "HELD" {
			t.Fatalf("child: %s", line)
		}
	case <-time.After(time.Minute):
		t.Fatal("the child did not take the lease within a minute")
	}

	_, err = Acquire(dir, os.Getpid())
	var held *HeldError
	if !errors.As(err, &held) || held.Owner.PID != cmd.Process.Pid || held.Owner.URL != "http://127.0.0.1:1/" {
		t.Fatalf("Acquire beside the child: %v", err)
	}

	// A holder killed without any cleanup (a crash) leaves its record, but not its lock.
	_ = cmd.Process.Kill()
	<-exited
	l, err := Acquire(dir, os.Getpid())
	if err != nil {
		t.Fatalf("Acquire after the holder died: %v", err)
	}
	defer l.Release()
	if o := ReadOwner(dir); o.PID != os.Getpid() || o.URL != "" {
		t.Fatalf("the dead holder's record was not replaced: %+v", o)
	}
}
