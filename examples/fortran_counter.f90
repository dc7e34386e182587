! A counter carried in the token, from Fortran: every rank adds its rank number once;
! then each enters until all have. Prints "fortran_counter: ok" on rank 0.
program fortran_counter
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use tally
  implicit none
  type(tally_mutex) :: m
  type(c_ptr) :: p
  integer(c_size_t) :: bytes
  integer(c_int64_t), pointer :: state(:)  ! state(1): the sum, state(2): how many added
  integer :: rank, n
  logical :: done

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, n)
  call tally_mutex_create_payload(MPI_COMM_WORLD, m, payload_bytes=16)  ! collective
  call tally_mutex_lock(m)                     ! REQUESTs out, the token in
  call tally_mutex_payload(m, p, bytes)        ! its payload: 16 bytes
  call c_f_pointer(p, state, [2])
  state(1) = state(1) + rank
  state(2) = state(2) + 1
  call tally_mutex_unlock(m)                   ! the token leaves with the sum
  done = .false.
  do while (.not. done)                        ! enter until every rank has added
    call tally_mutex_lock(m)
    call tally_mutex_payload(m, p, bytes)
    call c_f_pointer(p, state, [2])
    done = state(2) == n
    if (done .and. rank == 0) then
      if (state(1) == int(n, c_int64_t) * (n - 1) / 2) print '(a)', "fortran_counter: ok"
    end if
    call tally_mutex_unlock(m)
  end do
  call tally_mutex_free(m)                     ! collective
  call MPI_Finalize()
end program fortran_counter
