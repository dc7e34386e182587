! The tally module from Fortran (mpi_f08): mutual exclusion checked two ways (a
! non-atomic read-modify-write of a counter in an MPI window, and a counter carried
! in the token's payload), trylock, a timed lock that times out, bad arguments and
! their error codes and messages. Prints "fortran: ok" on rank 0 when every check
! holds on every rank; exits non-zero otherwise.
program test_fortran
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use tally
  implicit none
  integer, parameter :: rounds = 40
  type(tally_mutex) :: m, none
  type(tally_options) :: opts
  type(tally_stats) :: stats
  type(MPI_Win) :: win
  type(c_ptr) :: base, p
  integer(c_int64_t), pointer :: counter(:)
  integer(c_size_t) :: bytes
  integer(kind=MPI_ADDRESS_KIND) :: wsize
  integer(c_int64_t) :: v, in_window
  integer :: rank, n, k, ierr, failures, all_failures, r
  logical :: acquired

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, n)
  failures = 0

  ! --- exclusion: a window counter read, incremented and written back non-atomically
  wsize = 8
  call MPI_Win_allocate(wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, base, win)
  call c_f_pointer(base, counter, [1])
  counter(1) = 0
  call MPI_Win_lock_all(0, win)
  call MPI_Barrier(MPI_COMM_WORLD)

  call tally_options_init(opts)
  call tally_mutex_create_payload(MPI_COMM_WORLD, m, opts, 8, ierr)  ! ierror positional, last
  call expect(ierr == TALLY_SUCCESS, "create")
  do k = 1, rounds
    call tally_mutex_lock(m)
    call MPI_Get(in_window, 1, MPI_INTEGER8, 0, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER8, win)
    call MPI_Win_flush(0, win)
    in_window = in_window + 1
    call MPI_Put(in_window, 1, MPI_INTEGER8, 0, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER8, win)
    call MPI_Win_flush(0, win)
    call tally_mutex_payload(m, p, bytes)        ! the token's own counter
    call expect(bytes == 8, "payload size")
    call c_f_pointer(p, counter, [1])
    counter(1) = counter(1) + 1
    call tally_mutex_unlock(m)
  end do
  call tally_mutex_get_stats(m, stats)
  call expect(stats%acquisitions == rounds, "stats: acquisitions")
  ! Everyone done: the last entry anywhere sees n * rounds in both counters. Enter
  ! until the window says so (each entry also serves the others' requests).
  do
    call tally_mutex_lock(m)
    call MPI_Get(in_window, 1, MPI_INTEGER8, 0, 0_MPI_ADDRESS_KIND, 1, MPI_INTEGER8, win)
    call MPI_Win_flush(0, win)
    call tally_mutex_payload(m, p, bytes)
    call c_f_pointer(p, counter, [1])
    v = counter(1)
    call tally_mutex_unlock(m)
    if (in_window >= int(n, c_int64_t) * rounds) exit
  end do
  call expect(in_window == int(n, c_int64_t) * rounds, "window counter")
  call expect(v == in_window, "payload counter equals window counter")
  call tally_mutex_free(m)
  call expect(.not. c_associated(m%handle), "free clears the handle")
  call MPI_Win_unlock_all(win)
  call MPI_Win_free(win)

  ! --- trylock: only the idle owner (rank 0 at creation) gets in; nobody asks. Flat
  ! topology: under topology node, a rank of the owner's node may enter too.
  call tally_options_init(opts)
  opts%topology = TALLY_TOPOLOGY_FLAT
  call tally_mutex_create(MPI_COMM_WORLD, m, opts)
  call tally_mutex_trylock(m, acquired)
  call expect(acquired .eqv. (rank == 0), "trylock at creation")
  if (acquired) call tally_mutex_unlock(m)
  call tally_mutex_rank(m, r)
  call expect(r == rank, "rank")
  call tally_mutex_size(m, r)
  call expect(r == n, "size")
  call MPI_Barrier(MPI_COMM_WORLD)

  ! --- timed lock times out while rank 0 holds the critical section
  if (rank == 0) call tally_mutex_lock(m)
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank /= 0) then
    call tally_mutex_timedlock(m, 0.05, acquired, ierr)
    call expect(ierr == TALLY_SUCCESS .and. .not. acquired, "timedlock times out")
    call tally_mutex_timedlock(m, 0.0d0, acquired, ierr)
    call expect(ierr == TALLY_SUCCESS .and. .not. acquired, "timedlock(0) times out")
  end if
  call MPI_Barrier(MPI_COMM_WORLD)
  if (rank == 0) call tally_mutex_unlock(m)
  call tally_mutex_lock(m)           ! and everyone still gets in
  call tally_mutex_unlock(m)

  ! --- misuse: codes and messages in C names
  call tally_mutex_unlock(m, ierr)
  call expect(ierr == TALLY_ERR_NOT_OWNER, "unlock without holding")
  call expect(index(tally_last_error(), "tally_mutex_unlock") > 0, "message names tally_mutex_unlock")
  call expect(len(tally_strerror(TALLY_ERR_NOT_OWNER)) > 0, "strerror")
  call tally_mutex_lock(m)
  call tally_mutex_lock(m, ierr)
  call expect(ierr == TALLY_ERR_DEADLOCK, "lock while holding")
  call tally_mutex_unlock(m)
  call tally_mutex_free(m)
  call tally_mutex_lock(m, ierr)     ! freed: no mutex
  call expect(ierr == TALLY_ERR_ARG, "lock after free")
  call tally_mutex_lock(none, ierr)  ! never created
  call expect(ierr == TALLY_ERR_ARG, "lock on no mutex")
  call tally_options_init(opts)
  opts%initial_owner = n + 3         ! refused collectively, on every rank
  call tally_mutex_create(MPI_COMM_WORLD, m, opts, ierr)
  call expect(ierr == TALLY_ERR_ARG, "bad initial_owner")
  call expect(index(tally_last_error(), "initial_owner") > 0, "message names initial_owner")
  call tally_mutex_create_payload(MPI_COMM_WORLD, m, -1, ierror=ierr)
  call expect(ierr == TALLY_ERR_ARG, "negative payload size")
  ! As every MPI call: ierror right after the required arguments.
  call tally_mutex_create(MPI_COMM_WORLD, m, ierr)
  call expect(ierr == TALLY_SUCCESS, "create with the default options, ierror positional")
  call tally_mutex_free(m, ierr)
  call expect(ierr == TALLY_SUCCESS, "free")

  call MPI_Allreduce(failures, all_failures, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0 .and. all_failures == 0) print '(a,i0,a)', "fortran: ok at ", n, " ranks"
  call MPI_Finalize()
  if (all_failures /= 0) error stop 1

contains

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      failures = failures + 1
      print '(a,i0,2a)', "fortran: rank ", rank, ": FAILED: ", what
    end if
  end subroutine

end program test_fortran
